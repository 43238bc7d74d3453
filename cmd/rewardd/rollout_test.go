package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
)

// rollout is an OpenRLHF 0.9 /get_reward body of n samples whose responses
// are about size bytes each. It is written as json.Marshal would write it,
// each distinct query encoded once; one query in 64 is distinct, so the
// judge is really asked.
func rollout(t *testing.T, n, size int) string {
	filler := strings.Repeat("We check the sum again, digit by digit. ", size/40)
	resp := strings.Replace(markedResponse, "5-3 = 2.", "5-3 = 2. "+filler, 1)
	query := func(resp string) string { return mustJSON(t, chatMLPrompt+resp+"<|im_end|>") }
	same := query(resp)
	var b strings.Builder
	b.Grow(n * (len(same) + 1))
	b.WriteString(`{"query":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%64 == 0 {
			b.WriteString(query(resp + fmt.Sprintf(" (%d)", i)))
		} else {
			b.WriteString(same)
		}
	}
	b.WriteString("]}")
	return b.String()
}

// TestRolloutSizedRequests posts to rewardd with its default limits what
// OpenRLHF 0.9 sends in one request, a whole rollout: 1,024 samples of
// 8K-token responses (36 MB) and 8,192 samples (512 prompts x 16). Every
// sample is judged and paid what the same response is paid alone. The
// child is the built rewardd: decoding 36 MB under the race detector cost
// 10 s of CPU and watched nothing the server's in-process tests do not.
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
		{"8,192 samples", 8192, 2 << 10},
	} {
		body := rollout(t, tc.n, tc.size)
		if tc.n == 1024 && len(body) < 36_000_000 {
			t.Fatalf("the body is %d bytes, want 36 MB", len(body))
		}
		// What one sample of the same response is paid alone.
		var alone rewardsAnswer
		one := rollout(t, 1, tc.size)
		if code, out := c.post(t, "/get_reward", one); code != http.StatusOK || json.Unmarshal(out, &alone) != nil || len(alone.Rewards) != 1 ||
			alone.ExtraLogs["rubric/judge_ok"][0] != 1 || alone.Rewards[0] <= 0 {
			t.Fatalf("%s: one sample alone: %d %.300s; want it judged and paid", tc.name, code, out)
		}
		code, out := c.post(t, "/get_reward", body)
		if code != http.StatusOK {
			t.Errorf("%s (%d bytes): %d %.300s", tc.name, len(body), code, out)
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
