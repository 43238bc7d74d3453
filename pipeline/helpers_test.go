package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/schema"
)

// testProblem is a synthetic problem with a known answer.
type testProblem struct {
	Problem  string `json:"problem"`
	Answer   string `json:"answer"`
	Solution string `json:"solution,omitempty"`
	ID       string `json:"id,omitempty"`
	Source   string `json:"source,omitempty"`
}

// makeProblems returns n distinct problems in varied answer notations.
func makeProblems(n int) []testProblem {
	out := make([]testProblem, n)
	for i := range n {
		p := testProblem{Problem: fmt.Sprintf("Problem %d: compute %d times %d, then add %d.", i, i+2, i%7+3, i%5)}
		switch i % 4 {
		case 0:
			p.Answer = fmt.Sprint((i+2)*(i%7+3) + i%5)
		case 1:
			p.Answer = fmt.Sprintf("\\frac{%d}{%d}", 2*i+1, 2*i+4)
		case 2:
			p.Answer = fmt.Sprintf("%d\\sqrt{2}", i+2)
		default:
			p.Answer = fmt.Sprintf("x^2 + %dx + 1", i+1)
		}
		if i%3 == 0 {
			p.Solution = "### Step 1: Multiply.\n### Step 2: Add.\n<answer>" + p.Answer + "</answer>"
		}
		out[i] = p
	}
	return out
}

func writeJSONL(t testing.TB, path string, rows []testProblem, extra ...string) {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, e := range extra {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func answersOf(rows []testProblem) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[strings.TrimSpace(r.Problem)] = r.Answer
	}
	return m
}

// startSim serves a simulated endpoint for the test's lifetime.
func startSim(t testing.TB, cfg llmtest.Config) (*llmtest.Server, string) {
	t.Helper()
	srv, url, stop, err := llmtest.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv, url
}

// testJob is a small, fast job against url.
func testJob(input, out, url string) job.Job {
	j := job.DefaultJob()
	j.Input.Paths = []string{input}
	j.Out = out
	j.Rollout.BaseURL = url
	j.Rollout.Model = "simulated"
	j.Rollout.N = 4
	j.Limits.Concurrency = 32
	j.Limits.AttemptTimeout = 2 * time.Second
	j.Limits.MaxAttempts = 8
	j.Prices = map[string]job.Price{"simulated": {Prompt: 1, Completion: 2}}
	j.Output.ShardRows = 7
	j.Output.CheckpointInterval = time.Second
	return j
}

func runJob(t testing.TB, job job.Job, opt Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), job, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// readCorpus returns the records of a run directory by id, failing on a duplicate.
func readCorpus(t testing.TB, dir string) map[string]*schema.Record {
	t.Helper()
	recs := map[string]*schema.Record{}
	err := corpus.ReadAll(dir, func(r *schema.Record) error {
		if _, dup := recs[r.ID]; dup {
			return fmt.Errorf("id %s appears twice in the shards", r.ID)
		}
		c := *r
		recs[r.ID] = &c
		return nil
	})
	if err != nil {
		t.Fatalf("reading corpus: %v", err)
	}
	return recs
}

// readFailures returns the ids in failures.jsonl with their last line.
func readFailures(t testing.TB, dir string) map[string]corpus.Failure {
	t.Helper()
	out := map[string]corpus.Failure{}
	b, err := os.ReadFile(filepath.Join(dir, "failures.jsonl"))
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var f corpus.Failure
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("failures.jsonl line %d: %v", i+1, err)
		}
		out[f.ID] = f
	}
	return out
}

// checkAccounted asserts every input problem is exactly one record or one
// failure, and the report's counts add up.
func checkAccounted(t testing.TB, dir string, rows []testProblem, rep *Report) {
	t.Helper()
	recs := readCorpus(t, dir)
	fails := readFailures(t, dir)
	for _, r := range rows {
		id := r.ID
		if id == "" {
			id = job.ProblemID(r.Problem, r.Answer)
		}
		_, done := recs[id]
		_, failed := fails[id]
		if done == failed {
			t.Errorf("problem %s: in shards=%v, in failures=%v; want exactly one", id, done, failed)
		}
	}
	if len(recs)+len(fails) != len(rows) {
		t.Errorf("%d records + %d failures != %d problems", len(recs), len(fails), len(rows))
	}
	p := rep.Problems
	if p.Unique != p.Done+p.Failed+p.LeftOut+p.Pending {
		t.Errorf("counts do not add up: unique %d != done %d + failed %d + left out %d + pending %d", p.Unique, p.Done, p.Failed, p.LeftOut, p.Pending)
	}
	if int(p.Done) != len(recs) || int(p.Failed+p.LeftOut) != len(fails) || p.Pending != 0 {
		t.Errorf("report says done %d failed %d left out %d pending %d; corpus has %d records, %d failures", p.Done, p.Failed, p.LeftOut, p.Pending, len(recs), len(fails))
	}
	var byStage int64
	for _, n := range rep.FailuresByStage {
		byStage += n
	}
	if byStage != p.Failed {
		t.Errorf("failures by stage add to %d, want the %d failed (left-out problems are not failures)", byStage, p.Failed)
	}
	if _, ok := rep.FailuresByStage[job.StageSelect]; ok {
		t.Errorf("left-out problems counted as failures by stage: %v", rep.FailuresByStage)
	}
	if rep.CorpusRows != int64(len(recs)) {
		t.Errorf("report corpus_rows %d, corpus has %d", rep.CorpusRows, len(recs))
	}
}

// fixture is the usual test setup: n problems in a JSONL file, a simulated
// endpoint that knows their answers, and a small job against it.
type fixture struct {
	dir, input string
	rows       []testProblem
	srv        *llmtest.Server
	url        string
	job        job.Job
}

func newFixture(t testing.TB, n int, cfg llmtest.Config) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), rows: makeProblems(n)}
	f.input = filepath.Join(f.dir, "in.jsonl")
	writeJSONL(t, f.input, f.rows)
	cfg.Answers = answersOf(f.rows)
	f.srv, f.url = startSim(t, cfg)
	f.job = testJob(f.input, filepath.Join(f.dir, "run"), f.url)
	return f
}

// tapTransport hands requests to the in-process simulated endpoint, after
// showing each to handle with its decoded messages. handle may answer the
// request itself (a non-nil response) or block to hold it.
type tapTransport struct {
	next   http.RoundTripper
	handle func(r *http.Request, kind llmtest.Kind, msgs []llmtest.Message) (*http.Response, error)
}

func (t *tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Messages []llmtest.Message `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	if t.handle != nil {
		resp, err := t.handle(r, llmtest.Classify(req.Messages), req.Messages)
		if resp != nil || err != nil {
			return resp, err
		}
	}
	return t.next.RoundTrip(r)
}

// chatReply is a well-formed chat completion whose one choice says content.
func chatReply(r *http.Request, content string) *http.Response {
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": "simulated",
		"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}

// inProcessFixture is a fixture whose endpoint is the simulated one in this
// process, reached through a tapTransport (tap.handle is nil: pass through).
func inProcessFixture(t testing.TB, n int, cfg llmtest.Config) (*fixture, *tapTransport, Options) {
	t.Helper()
	f := &fixture{dir: t.TempDir(), rows: makeProblems(n)}
	f.input = filepath.Join(f.dir, "in.jsonl")
	writeJSONL(t, f.input, f.rows)
	cfg.Answers = answersOf(f.rows)
	f.srv = llmtest.New(cfg)
	t.Cleanup(f.srv.Close)
	f.url = "http://llmtest.invalid/v1"
	f.job = testJob(f.input, filepath.Join(f.dir, "run"), f.url)
	tap := &tapTransport{next: f.srv.Transport()}
	return f, tap, Options{HTTPClient: &http.Client{Transport: tap}}
}

// waitFor polls cond until it holds; it fails the test if that takes
// unreasonably long (the wait is for an event, not a measure of speed).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// testSeed is the seed of a test's random choices: RUBRICFORGE_TEST_SEED
// when set (to replay a failure), else fixed. It is logged.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(20240611)
	if s := os.Getenv("RUBRICFORGE_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RUBRICFORGE_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("random seed %d (set RUBRICFORGE_TEST_SEED to replay another)", seed)
	return seed
}

func slogText(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
