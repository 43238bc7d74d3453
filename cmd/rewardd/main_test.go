package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/schema"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	judge := []string{"--judge-base-url", "http://127.0.0.1:1/v1", "--judge-model", "m"}
	panels := t.TempDir()
	panelFile := func(name, text string) string {
		path := filepath.Join(panels, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	onlyOne := panelFile("one.yaml", "- model: m1\n")
	unknownKey := panelFile("typo.yaml", "- model: m1\n- model: m2\n  temprature: 0\n")
	noURL := panelFile("nourl.yaml", "- model: m1\n- model: m2\n")
	keyUnset := panelFile("key.yaml", "- model: m1\n  base_url: http://127.0.0.1:1/v1\n- model: m2\n  base_url: https://api.openai.com/v1\n  api_key_env: REWARDD_TEST_OPENAI_KEY\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"help", []string{"-h"}, exitOK, "--reward.remote_url"},
		{"help names the adapters", []string{"-h"}, exitOK, "POST /verify (a NeMo Gym resource server)"},
		{"no judge", nil, exitUsage, "--judge-base-url and --judge-model are required"},
		{"bad scheme", append([]string{"--scheme", "best"}, judge...), exitUsage, `--scheme "best"`},
		{"remote without consent", append([]string{"--addr", "0.0.0.0:8700"}, judge...), exitUsage, "--allow-remote"},
		{"token variable unset", append([]string{"--token-env", "REWARDD_TEST_TOKEN"}, judge...), exitUsage, "REWARDD_TEST_TOKEN"},
		{"bad budget", append([]string{"--r-pitfall", "1"}, judge...), exitUsage, "r_pit"},
		{"unknown flag", []string{"--nope"}, exitUsage, "flag provided but not defined"},
		{"stray argument", append(judge, "runs/demo"), exitUsage, `unexpected argument "runs/demo"`},
		{"address without port", append([]string{"--addr", "127.0.0.1"}, judge...), exitUsage, "--addr"},
		{"bad log level", append([]string{"--log-level", "loud"}, judge...), exitUsage, "--log-level"},
		{"missing corpus", append([]string{"--corpus", "/nonexistent/run", "--addr", "127.0.0.1:0"}, judge...), exitUsage, "no such file"}, // as a missing directory in every command
		{"a problems file as corpus", append([]string{"--corpus", "../../examples/problems.jsonl", "--addr", "127.0.0.1:0"}, judge...), exitFailed, "no rubric loaded from ../../examples/problems.jsonl"},
		{"passage budget too small", append([]string{"--judge-passage-tokens", "100"}, judge...), exitUsage, "--judge-passage-tokens 100 is below 256"},
		{"bad failure policy", append([]string{"--on-judge-failure", "zero"}, judge...), exitUsage, `--on-judge-failure "zero" is not one of floor, outcome, error`},
		{"ORS environment name with a slash", append([]string{"--ors-env", "a/b"}, judge...), exitUsage, `--ors-env "a/b"`},
		{"no ORS sessions", append([]string{"--ors-max-sessions", "0"}, judge...), exitUsage, "--ors-max-sessions"},
		{"no ORS idle time", append([]string{"--ors-session-idle", "0s"}, judge...), exitUsage, "--ors-session-idle"},
		{"judge seed not a number", append([]string{"--judge-seed", "seven"}, judge...), exitUsage, `--judge-seed: seed "seven": want an integer, or none`},
		{"endpoint kind not a name", append([]string{"--judge-endpoint-kind", "vLLM"}, judge...), exitUsage, `--judge-endpoint-kind: endpoint kind "vLLM"`},
		{"panel file missing", append([]string{"--judge-panel", filepath.Join(panels, "nope.yaml")}, judge...), exitUsage, "--judge-panel: panel file " + filepath.Join(panels, "nope.yaml") + ":\n  cannot read it"},
		{"panel of one", append([]string{"--judge-panel", onlyOne}, judge...), exitUsage,
			"--judge-panel: panel file " + onlyOne + ":\n  a panel needs at least two judges (to ask one judge, leave the panel out and set its model in --judge-model)"},
		{"panel setting misspelt", append([]string{"--judge-panel", unknownKey}, judge...), exitUsage, "--judge-panel: panel file " + unknownKey + ":\n  [1].temprature (line 3): unknown setting"},
		{"panel judge without endpoint", []string{"--judge-panel", noURL}, exitUsage, "--judge-panel: panel file " + noURL + ":\n  [0]: no base_url (set base_url here or --judge-base-url)"},
		{"panel judge's key unset", []string{"--judge-panel", keyUnset}, exitUsage, "--judge-panel: panel file " + keyUnset + ":\n  [1].api_key_env: REWARDD_TEST_OPENAI_KEY is unset or blank"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errOut, env)
		if code != tc.code || !strings.Contains(errOut.String(), tc.says) {
			t.Errorf("%s: exit %d, want %d; stderr lacks %q:\n%s", tc.name, code, tc.code, tc.says, errOut.String())
		}
	}
	var errOut bytes.Buffer
	run(context.Background(), []string{"-h"}, io.Discard, &errOut, env)
	for _, flag := range []string{"corpus", "addr", "scheme", "token-env", "judge-base-url", "judge-model", "judge-api-key-env",
		"judge-concurrency", "judge-timeout", "judge-passage-tokens", "cache", "max-body", "max-queue", "drain-timeout", "r-suggest", "lambda", "alpha",
		"ors-env", "ors-max-sessions", "ors-session-idle", "judge-seed", "judge-endpoint-kind", "judge-panel"} {
		if !strings.Contains(errOut.String(), "-"+flag) {
			t.Errorf("-h does not explain --%s", flag)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServesUntilCanceled starts rewardd against a simulated judge over
// loopback, scores a request with the rubric in its label, and stops it.
func TestServesUntilCanceled(t *testing.T) {
	t.Parallel()
	_, simURL, stop, err := sim.Start(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const token = "test-token-123"
	env := func(k string) string {
		if k == "REWARDD_TOKEN" {
			return token
		}
		return ""
	}
	base, stopRewardd, stderr := startRewardd(t, env, "--addr", "127.0.0.1:0", "--judge-base-url", simURL, "--judge-model", "simulated", "--token-env", "REWARDD_TOKEN")

	label := schema.Label{ID: "p", Question: "What is 2+3?", GroundTruth: "5", Rubric: []schema.Item{{ID: 1, Type: "SUGGEST", Text: "Adds.", Weight: 1}}}
	lb, _ := json.Marshal(label)
	body, _ := json.Marshal(map[string]any{"prompt": "What is 2+3?", "response": "### Step 1: Add.\n<answer>5</answer>", "label": string(lb)})
	req, _ := http.NewRequest(http.MethodPost, base+"/score?bare=1&scheme=rgr", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /score: %d %s", resp.StatusCode, got)
	}
	var r float64
	if err := json.Unmarshal(got, &r); err != nil || r < 0 || r > 1 {
		t.Errorf("bare reward %s: %v", got, err)
	}
	if code := stopRewardd(); code != exitOK {
		t.Errorf("exit %d after cancel, want 0; stderr:\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), token) {
		t.Errorf("the token reached the log:\n%s", stderr.String())
	}
}

// TestEveryFlagHasExample keeps -h honest: every flag says what it does and
// shows an example.
func TestEveryFlagHasExample(t *testing.T) {
	t.Parallel()
	o := &options{}
	fs := flag.NewFlagSet("rewardd", flag.ContinueOnError)
	o.serverFlags(fs)
	o.judgeFlags(fs)
	o.formulaFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, "(e.g. ") || !strings.Contains(f.Usage[strings.Index(f.Usage, "(e.g. "):], "--"+f.Name) {
			t.Errorf("-h: --%s has no example: %q", f.Name, f.Usage)
		}
	})
}

// startRewardd runs rewardd with args until stop, which cancels it and
// returns its exit code; base is the URL it announced.
func startRewardd(t *testing.T, env func(string) string, args ...string) (base string, stop func() int, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	stderr = &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, pw, stderr, env)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the URL: %v (stderr: %s)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	return strings.TrimSpace(line), func() int { cancel(); return <-done }, stderr
}

// TestServesAPanel starts rewardd with a --judge-panel file of two
// simulated judges, one of which never answers usably: a response is
// still judged (judge_ok true, the failed judge counted against it, so
// the one positive item it meets is not paid), and /metrics counts each
// judge's calls and failures under its name.
func TestServesAPanel(t *testing.T) {
	t.Parallel()
	_, simURL, stopSim, err := sim.Start(sim.Config{Judges: map[string]sim.JudgeProfile{"broken": {Fail: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stopSim()
	panel := filepath.Join(t.TempDir(), "panel.yaml")
	if err := os.WriteFile(panel, []byte("- name: good\n  model: simulated\n- name: down\n  model: broken\n  endpoint_kind: vllm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base, stop, stderr := startRewardd(t, func(string) string { return "" }, "--addr", "127.0.0.1:0", "--judge-base-url", simURL, "--judge-panel", panel, "--judge-seed", "3")
	label := schema.Label{ID: "p", Question: "What is 2+3?", GroundTruth: "5", Rubric: []schema.Item{{ID: 1, Type: "SUGGEST", Text: "Adds.", Weight: 1}}}
	lb, _ := json.Marshal(label)
	body, _ := json.Marshal(map[string]any{"items": []map[string]any{{"response": "### Step 1: Add. " + sim.SatisfiedMarker(1) + "\n<answer>5</answer>", "label": string(lb), "scheme": "rgr"}}})
	resp, err := http.Post(base+"/v1/score", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Results []struct {
			JudgeOK bool    `json:"judge_ok"`
			Reward  float64 `json:"reward"`
			Items   []struct {
				Satisfied bool `json:"satisfied"`
			} `json:"items"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || len(ans.Results) != 1 {
		t.Fatalf("POST /v1/score: %d %v %+v", resp.StatusCode, err, ans)
	}
	resp.Body.Close()
	if r := ans.Results[0]; !r.JudgeOK || len(r.Items) != 1 || r.Items[0].Satisfied {
		t.Errorf("result %+v: want judge_ok true and the item not satisfied (1 of 2 judges is no majority)", r)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{`rewardd_panel_judge_calls_total{judge="good"} 1`, `rewardd_panel_judge_failures_total{judge="down"} 1`, `rewardd_panel_judge_failures_total{judge="good"} 0`} {
		if !strings.Contains(string(metrics), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "judges=good,down") {
		t.Errorf("the log does not name the panel's judges:\n%s", stderr.String())
	}
}
