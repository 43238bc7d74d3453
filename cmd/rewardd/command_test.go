package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/schema"
)

// Secrets the child gets through its environment; neither may reach its log.
const (
	judgeKey    = "sk-judge-secret-7f3a"
	serverToken = "rewardd-token-19c2"
	holdMarker  = "[rewardd-test:hold]"
)

// heldJudge is a simulated judge over loopback that holds every request
// whose body contains holdMarker until release is called, and remembers the
// Authorization headers it saw.
type heldJudge struct {
	srv      *httptest.Server
	held     chan struct{}
	release  func()
	mu       sync.Mutex
	authSeen []string
}

func startHeldJudge(t *testing.T) *heldJudge {
	t.Helper()
	simulator := sim.New(sim.Config{})
	gate := make(chan struct{})
	h := &heldJudge{held: make(chan struct{}, 16)}
	var once sync.Once
	h.release = func() { once.Do(func() { close(gate) }) }
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.mu.Lock()
		h.authSeen = append(h.authSeen, r.Header.Get("Authorization"))
		h.mu.Unlock()
		if bytes.Contains(body, []byte(holdMarker)) {
			h.held <- struct{}{}
			<-gate
		}
		simulator.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { h.release(); h.srv.Close(); simulator.Close() })
	return h
}

// writeCorpus writes a JSONL file of one record (the rubric of "What is
// 2+3?": two SUGGESTs, a PITFALL, a BONUS and an ANSWER item).
func writeCorpus(t *testing.T) string {
	t.Helper()
	var items []schema.Item
	for i, typ := range []string{schema.TypeSuggest, schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer} {
		items = append(items, schema.Item{ID: int32(i + 1), Type: typ, Text: "criterion " + typ, Weight: 1, Polarity: schema.PolarityOf(typ)})
	}
	rec := map[string]any{"id": "sum-2-3", "source": "tests", "problem": "What is 2+3?", "answer": "5", "style": schema.StyleSRaR, "rubric": items}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// child is rewardd running as a child process.
type child struct {
	cmd      *exec.Cmd
	base     string        // the URL of its first stdout line
	rest     *syncBuffer   // stdout after the first line
	stderr   *syncBuffer   // its whole log
	draining chan struct{} // closed when the log says it is draining
	outDone  chan struct{} // closed when stdout and stderr are at EOF
}

// startChild starts the built rewardd (not race-instrumented: the server's
// own tests run in-process under the race detector) with args.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(testbin.Command(t, "cmd/rewardd"), args...)
	cmd.Env = append(os.Environ(), "REWARDD_TEST_JUDGE_KEY="+judgeKey, "REWARDD_TEST_TOKEN="+serverToken)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, rest: &syncBuffer{}, stderr: &syncBuffer{}, draining: make(chan struct{}), outDone: make(chan struct{})}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	var wg sync.WaitGroup
	wg.Go(func() { c.readLog(stderr) })
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	wg.Go(func() { _, _ = io.Copy(c.rest, out) })
	go func() { wg.Wait(); close(c.outDone) }()
	if err != nil {
		t.Fatalf("reading rewardd's first stdout line: %v; stderr:\n%s", err, c.stderr.String())
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[1-9][0-9]*\n$`).MatchString(line) {
		t.Fatalf("first stdout line %q is not http://127.0.0.1:PORT", line)
	}
	c.base = strings.TrimSpace(line)
	return c
}

func (c *child) readLog(r io.Reader) {
	sc := bufio.NewScanner(r)
	var once sync.Once
	for sc.Scan() {
		_, _ = c.stderr.Write(append(sc.Bytes(), '\n'))
		if strings.Contains(sc.Text(), "msg=draining") {
			once.Do(func() { close(c.draining) })
		}
	}
}

// send posts body with the bearer token and returns the status and body.
func (c *child) send(path, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+serverToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func (c *child) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	code, out, err := c.send(path, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// markedResponse is correct and has two steps; the simulated judge calls
// items 1 and 4 satisfied at step 1 and item 5 at step 2, so its SRaR
// reward is r_base 1 + suggest 0.8/2 + bonus 1 = 2.4 and its score
// (2.4+1)/(2.8+1).
var markedResponse = "### Step 1: Add.\n2+3 = 5. " + sim.SatisfiedMarker(1, 4) +
	"\n### Step 2: Check.\n5-3 = 2. " + sim.SatisfiedMarker(5) + "\n<answer>5</answer>"

const chatMLPrompt = "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"

// TestCommand runs the real command: it prints exactly its URL on stdout,
// answers OpenRLHF and slime with the corpus's rubric, sends the judge key
// from the environment, and on SIGTERM answers the request in flight before
// it exits 0.
func TestCommand(t *testing.T) {
	t.Parallel()
	judge := startHeldJudge(t)
	c := startChild(t, "--corpus", writeCorpus(t), "--addr", "127.0.0.1:0", "--judge-base-url", judge.srv.URL+"/v1",
		"--judge-model", "simulated", "--judge-api-key-env", "REWARDD_TEST_JUDGE_KEY", "--token-env", "REWARDD_TEST_TOKEN")

	code, out := c.post(t, "/get_reward", mustJSON(t, map[string]any{
		"query": []string{chatMLPrompt + markedResponse + "<|im_end|>"}, "prompts": []string{chatMLPrompt}, "labels": []string{""}}))
	var gr struct{ Rewards, Scores []float64 }
	if err := json.Unmarshal(out, &gr); code != http.StatusOK || err != nil || len(gr.Rewards) != 1 {
		t.Fatalf("POST /get_reward: %d %s (%v)", code, out, err)
	}
	if !near(gr.Rewards[0], 2.4) || !near(gr.Scores[0], 3.4/3.8) {
		t.Errorf("/get_reward: rewards %v scores %v, want [2.4] [%v]", gr.Rewards, gr.Scores, 3.4/3.8)
	}
	code, out = c.post(t, "/score?bare=1", mustJSON(t, map[string]any{"prompt": chatMLPrompt, "response": markedResponse}))
	if code != http.StatusOK || strings.TrimSpace(string(out)) != "2.4" {
		t.Errorf("POST /score?bare=1: %d %s, want 200 2.4", code, out)
	}

	// A request whose judge call is held is in flight when SIGTERM comes.
	held := "### Step 1: Add.\n2+3 = 5. " + holdMarker + " " + sim.SatisfiedMarker(1) + "\n<answer>5</answer>"
	type answer struct {
		code int
		body []byte
		err  error
	}
	inFlight := make(chan answer, 1)
	heldBody := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": held}}})
	go func() {
		code, body, err := c.send("/v1/score", heldBody)
		inFlight <- answer{code, body, err}
	}()
	<-judge.held
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-c.draining
	judge.release()
	a := <-inFlight
	if a.err != nil {
		t.Fatalf("the request in flight at SIGTERM: %v", a.err)
	}
	var v1 struct {
		Results []struct {
			Reward  float64 `json:"reward"`
			JudgeOK bool    `json:"judge_ok"`
		} `json:"results"`
	}
	if err := json.Unmarshal(a.body, &v1); a.code != http.StatusOK || err != nil || len(v1.Results) != 1 {
		t.Fatalf("the request in flight at SIGTERM: %d %s (%v)", a.code, a.body, err)
	}
	// r_base 1 + suggest 0.4: the verdict arrived after SIGTERM and counted.
	if r := v1.Results[0]; !r.JudgeOK || !near(r.Reward, 1.4) {
		t.Errorf("the request in flight at SIGTERM: %+v, want judge_ok and reward 1.4", r)
	}
	<-c.outDone
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("rewardd after SIGTERM: %v, want exit 0; stderr:\n%s", err, c.stderr.String())
	}
	if c.rest.String() != "" {
		t.Errorf("stdout has more than the URL line: %q", c.rest.String())
	}
	log := c.stderr.String()
	for _, secret := range []string{judgeKey, serverToken} {
		if strings.Contains(log, secret) {
			t.Errorf("a secret reached the log:\n%s", log)
		}
	}
	judge.mu.Lock()
	defer judge.mu.Unlock()
	if len(judge.authSeen) == 0 || judge.authSeen[0] != "Bearer "+judgeKey {
		t.Errorf("the judge saw Authorization %q, want the key from --judge-api-key-env", judge.authSeen)
	}
}

// TestCommandUsageExit checks the exit status a script sees for a bad flag.
func TestCommandUsageExit(t *testing.T) {
	cmd := exec.Command(testbin.Command(t, "cmd/rewardd"), "--judge-model", "m", "--addr", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
		t.Fatalf("rewardd without --judge-base-url: %v, want exit %d", err, exitUsage)
	}
	if len(out) != 0 || !strings.Contains(stderr.String(), "--judge-base-url") {
		t.Errorf("stdout %q, stderr %q: want nothing on stdout and the missing flag named", out, stderr.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
