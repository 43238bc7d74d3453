package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rolloutFile writes to a file an OpenRLHF 0.9 /get_reward body of n
// samples whose responses are about size bytes each, as json.Marshal would
// write it, each distinct query encoded once; one query in 64 is distinct,
// so the judge is really asked. It returns the file's path and size. The
// repeated query is copied from file to file by the kernel and the file is
// posted with sendfile (postFile), so that the race-instrumented test
// process does not read or write the body's bytes itself: the body is what
// rewardd is tested on, not the test's copying of it.
func rolloutFile(t *testing.T, n, size int) (string, int64) {
	t.Helper()
	filler := strings.Repeat("We check the sum again, digit by digit. ", size/40)
	resp := strings.Replace(markedResponse, "5-3 = 2.", "5-3 = 2. "+filler, 1)
	query := func(resp string) string { return mustJSON(t, chatMLPrompt+resp+"<|im_end|>") }
	dir := t.TempDir()
	same, err := os.Create(filepath.Join(dir, "same"))
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()
	if _, err := same.WriteString("," + query(resp)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "body.json")
	body, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	write := func(s string) {
		if _, err := body.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"query":[`)
	for i := range n {
		switch {
		case i == 0:
			write(query(resp + " (0)"))
		case i%64 == 0:
			write("," + query(resp+fmt.Sprintf(" (%d)", i)))
		default:
			if _, err := same.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			if _, err := body.ReadFrom(same); err != nil { // copy_file_range
				t.Fatal(err)
			}
		}
	}
	write("]}")
	info, err := body.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return path, info.Size()
}

// postFile posts the file at path (size bytes) with the bearer token and
// returns the status and body; the file goes to the socket by sendfile.
func (c *child) postFile(t *testing.T, path string, size int64) (int, []byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.base+"/get_reward", f) // the client closes f
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+serverToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /get_reward: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestRolloutSizedRequests posts to rewardd with its default limits what
// OpenRLHF 0.9 sends in one request, a whole rollout: 1,024 samples of
// 8K-token responses (36 MB, over the 16 MiB default body limit rewardd
// once had) and 8,192 samples (512 prompts x 16, over the 4,096 samples
// it once took; short responses: the 36 MB body is the first case's).
// Every sample is judged and paid what the same response is paid alone.
// The child is the built rewardd: decoding 36 MB under the race detector
// cost 10 s of CPU and watched nothing the server's in-process tests do not.
func TestRolloutSizedRequests(t *testing.T) {
	t.Parallel()
	judge := startHeldJudge(t)
	c := startChild(t, "--corpus", writeCorpus(t), "--addr", "127.0.0.1:0", "--judge-base-url", judge.srv.URL+"/v1",
		"--judge-model", "simulated")
	for _, tc := range []struct {
		name    string
		n, size int
	}{
		{"1,024 samples of 35 KB", 1024, 35 << 10},
		{"8,192 samples", 8192, 0},
	} {
		body, size := rolloutFile(t, tc.n, tc.size)
		if tc.n == 1024 && size < 36_000_000 {
			t.Fatalf("the body is %d bytes, want 36 MB", size)
		}
		// What one sample of the same response is paid alone.
		var alone rewardsAnswer
		one, oneSize := rolloutFile(t, 1, tc.size)
		if code, out := c.postFile(t, one, oneSize); code != http.StatusOK || json.Unmarshal(out, &alone) != nil || len(alone.Rewards) != 1 ||
			alone.ExtraLogs["rubric/judge_ok"][0] != 1 || alone.Rewards[0] <= 0 {
			t.Fatalf("%s: one sample alone: %d %.300s; want it judged and paid", tc.name, code, out)
		}
		code, out := c.postFile(t, body, size)
		if code != http.StatusOK {
			t.Errorf("%s (%d bytes): %d %.300s", tc.name, size, code, out)
			continue
		}
		var got rewardsAnswer
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		ok := 0
		for i, r := range got.Rewards {
			if math.Abs(r-alone.Rewards[0]) < 1e-9 && got.ExtraLogs["rubric/judge_ok"][i] == 1 {
				ok++
			}
		}
		if len(got.Rewards) != tc.n || ok != tc.n {
			t.Errorf("%s: %d rewards, %d judged at %v; want %d", tc.name, len(got.Rewards), ok, alone.Rewards[0], tc.n)
		}
	}
}
