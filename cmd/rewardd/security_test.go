package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/schema"
)

// startRun runs rewardd in-process with args and env until the test ends and
// returns its base URL.
func startRun(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, pw, stderr, func(k string) string { return env[k] })
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr.String())
		}
		for _, v := range env {
			if strings.TrimSpace(v) != "" && strings.Contains(stderr.String(), strings.TrimSpace(v)) {
				t.Errorf("a secret reached the log:\n%s", stderr.String())
			}
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the URL: %v (stderr: %s)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	return strings.TrimSpace(line)
}

// authJudge is a simulated judge that remembers the Authorization headers
// it was sent.
func authJudge(t *testing.T) (url string, seen func() []string) {
	simulator := sim.New(sim.Config{})
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		simulator.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); simulator.Close() })
	return srv.URL + "/v1", func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), auth...) }
}

func scoreOnce(t *testing.T, base, token string) int {
	t.Helper()
	label := schema.Label{ID: "p", Question: "What is 2+3?", GroundTruth: "5", Rubric: []schema.Item{{ID: 1, Type: "SUGGEST", Text: "Adds.", Weight: 1}}}
	lb, _ := json.Marshal(label)
	body, _ := json.Marshal(map[string]any{"prompt": "What is 2+3?", "response": "### Step 1: Add.\n<answer>5</answer>", "label": string(lb)})
	req, _ := http.NewRequest(http.MethodPost, base+"/score?bare=1", bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestSecurityDefaults checks what a user gets without asking: no server
// open to other hosts without a token, no key sent to a judge the user did
// not name a key for, and a token read from a file with its newline still
// working.
func TestSecurityDefaults(t *testing.T) {
	t.Parallel()
	judge := []string{"--judge-base-url", "http://127.0.0.1:1/v1", "--judge-model", "m"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		says string
	}{
		{"remote without a token", append([]string{"--addr", "0.0.0.0:8700", "--allow-remote"}, judge...), nil, "--allow-remote needs --token-env"},
		{"key variable named but unset", append([]string{"--judge-api-key-env", "MY_JUDGE_KEY"}, judge...), nil, "--judge-api-key-env MY_JUDGE_KEY"},
		{"blank token", append([]string{"--token-env", "REWARDD_TOKEN"}, judge...), map[string]string{"REWARDD_TOKEN": " \n"}, "REWARDD_TOKEN"},
	} {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a server that starts stops here
		code := run(ctx, tc.args, &out, &errOut, func(k string) string { return tc.env[k] })
		cancel()
		if code != exitUsage || !strings.Contains(errOut.String(), tc.says) {
			t.Errorf("%s: exit %d, want %d; stderr lacks %q:\n%s", tc.name, code, exitUsage, tc.says, errOut.String())
		}
	}

	// OPENAI_API_KEY in the environment is not sent to a judge unless the
	// user names the variable.
	url, seen := authJudge(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-user-openai-key-5d1e", "REWARDD_TOKEN": "tok-from-a-file\n"}
	base := startRun(t, env, "--addr", "127.0.0.1:0", "--judge-base-url", url, "--judge-model", "simulated", "--token-env", "REWARDD_TOKEN")
	if code := scoreOnce(t, base, "tok-from-a-file"); code != http.StatusOK {
		t.Errorf("the token without its trailing newline: %d, want 200", code)
	}
	if code := scoreOnce(t, base, ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	for _, a := range seen() {
		if a != "" {
			t.Errorf("the judge was sent Authorization %q without --judge-api-key-env", a)
		}
	}
	if len(seen()) == 0 {
		t.Error("the judge was never called")
	}
}
