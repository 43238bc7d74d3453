package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

func runJob(t testing.TB, j job.Job, opt Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), j, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// checkAccounted asserts every input problem is exactly one record or one
// failure, and the report's counts add up.
func checkAccounted(t testing.TB, dir string, rows []runtest.Problem, rep *Report) {
	t.Helper()
	recs := corpusIDs(t, dir)
	fails := runtest.ReadFailures(t, dir)
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

// fixture is runtest.Fixture under the names this package's tests use.
type fixture struct {
	dir, input string
	rows       []runtest.Problem
	srv        *sim.Server
	url        string
	job        job.Job
}

func newFixture(t testing.TB, n int, cfg sim.Config) *fixture {
	t.Helper()
	r := runtest.NewFixture(t, n, cfg)
	return &fixture{dir: r.Dir, input: r.Input, rows: r.Rows, srv: r.Srv, url: r.URL, job: r.Job}
}

// tapTransport hands requests to the in-process simulated endpoint, after
// showing each to handle with its decoded messages. handle may answer the
// request itself (a non-nil response) or block to hold it.
type tapTransport struct {
	next   http.RoundTripper
	handle func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error)
}

func (t *tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Messages []sim.Message `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	if t.handle != nil {
		resp, err := t.handle(r, sim.Classify(req.Messages), req.Messages)
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
func inProcessFixture(t testing.TB, n int, cfg sim.Config) (*fixture, *tapTransport, Options) {
	t.Helper()
	f := &fixture{dir: t.TempDir(), rows: runtest.MakeProblems(n)}
	f.input = filepath.Join(f.dir, "in.jsonl")
	runtest.WriteJSONL(t, f.input, f.rows)
	cfg.Answers = runtest.AnswersOf(f.rows)
	f.srv = sim.New(cfg)
	t.Cleanup(f.srv.Close)
	f.url = "http://sim.invalid/v1"
	f.job = runtest.TestJob(f.input, filepath.Join(f.dir, "run"), f.url)
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
