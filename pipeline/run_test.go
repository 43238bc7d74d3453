package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/schema"
)

func TestRunEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		style     string
		judgeMode string
		empirical bool
	}{
		{"srar batch judge with empirical validity", schema.StyleSRaR, "batch", true},
		{"srar item judge", schema.StyleSRaR, "item", false},
		{"factual_process", schema.StyleFactualProcess, "batch", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 20, sim.Config{})
			rows, jb := f.rows, f.job
			srv := f.srv
			jb.Style = tc.style
			jb.Judge.Mode = tc.judgeMode
			jb.Empirical.Enabled = tc.empirical
			if tc.style == schema.StyleFactualProcess {
				jb.Selection = job.Selection{MinCorrect: 0, MinIncorrect: 0}
			}
			rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
			if rep.Status != StatusFinished {
				t.Fatalf("status %q (%s), want finished", rep.Status, rep.StopReason)
			}
			checkAccounted(t, jb.Out, rows, rep)
			recs := runtest.ReadCorpus(t, jb.Out)
			if len(recs) < len(rows)/3 {
				t.Fatalf("only %d of %d problems became records", len(recs), len(rows))
			}
			for _, r := range recs {
				if err := schema.CheckRubric(tc.style, r.Rubric, jb.Distill.MaxItems); err != nil {
					t.Errorf("record %s: %v", r.ID, err)
				}
				if len(r.Rollouts) != jb.Rollout.N {
					t.Errorf("record %s has %d rollouts, want %d", r.ID, len(r.Rollouts), jb.Rollout.N)
				}
				n := 0
				for i, ro := range r.Rollouts {
					if int(ro.Index) != i {
						t.Errorf("record %s rollout %d has index %d", r.ID, i, ro.Index)
					}
					if ro.Correct {
						n++
					}
				}
				if int(r.NCorrect) != n || r.PassRate != float64(n)/float64(len(r.Rollouts)) {
					t.Errorf("record %s: n_correct %d pass_rate %g, counted %d", r.ID, r.NCorrect, r.PassRate, n)
				}
				for _, it := range r.Rubric {
					if it.Valid == nil || it.ValidReason == nil {
						t.Errorf("record %s item %d not judged", r.ID, it.ID)
					}
					if tc.empirical && it.SatRate == nil {
						t.Errorf("record %s item %d has no satisfaction rate", r.ID, it.ID)
					}
				}
				if r.Provenance.SpecVersion != schema.SpecVersion || r.Provenance.RolloutTemplate == "" || r.Provenance.JudgeModel == nil || r.Provenance.JobFingerprint == "" {
					t.Errorf("record %s provenance incomplete: %+v", r.ID, r.Provenance)
				}
				if r.Usage.Requests == 0 || r.Usage.PromptTokens == 0 {
					t.Errorf("record %s usage not counted: %+v", r.ID, r.Usage)
				}
			}
			if rep.Validity["overall"] == nil || rep.Validity["overall"].Items == 0 {
				t.Errorf("no validity figures in report: %+v", rep.Validity)
			}
			if rep.LLM.Total.CostUSD <= 0 || !rep.CostCounted {
				t.Errorf("no cost accounted: %+v", rep.LLM.Total)
			}
			p := rep.Problems
			if p.FailedThisSession != p.Failed || p.LeftOutThisSession != p.LeftOut {
				t.Errorf("left-out problems counted as failed this session: %+v", p)
			}
			// Accuracy is over every sampled rollout, kept or left out.
			n := int64(jb.Rollout.N)
			if rep.Sampled.Total != n*(p.Done+p.LeftOut+p.Failed-rep.FailuresByStage[job.StageRollout]) || rep.Sampled.Total <= rep.Rollouts.Total {
				t.Errorf("sampled rollouts %+v for %d done, %d left out, %d failed; kept rollouts %d", rep.Sampled, p.Done, p.LeftOut, p.Failed, rep.Rollouts.Total)
			}

			// Running again resumes: nothing is sent, nothing changes.
			before := srv.Count()
			rep2 := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
			if sent := srv.Count() - before; sent != 0 {
				t.Errorf("resume of a finished run sent %d requests", sent)
			}
			if rep2.Problems.AlreadyDone != rep.Problems.Done || rep2.Problems.Done != rep.Problems.Done {
				t.Errorf("resume: already done %d, done %d; first run done %d", rep2.Problems.AlreadyDone, rep2.Problems.Done, rep.Problems.Done)
			}
			checkAccounted(t, jb.Out, rows, rep2)

			// Retrying failures re-uses the cache: a left-out problem is left out again.
			before = srv.Count()
			rep3 := runJob(t, jb, Options{HTTPClient: runtest.InProcess, RetryFailed: true})
			if rep3.Problems.LeftOut != rep.Problems.LeftOut {
				t.Errorf("retry-failed: left out %d, first run %d", rep3.Problems.LeftOut, rep.Problems.LeftOut)
			}
			if sent := srv.Count() - before; sent != 0 && rep.Problems.Failed == 0 {
				t.Errorf("retry-failed sent %d requests though no problem had failed at a model stage", sent)
			}
		})
	}
}

func TestRunWithFaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(60)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	faults := sim.SpreadFaults(0.2)
	faults.RetryAfter = time.Second
	faults.HangMax = 5 * time.Second
	srv, url := runtest.StartSim(t, sim.Config{Answers: runtest.AnswersOf(rows), Faults: faults, Latency: 2 * time.Millisecond, KeepLog: true})
	jb := runtest.TestJob(input, filepath.Join(dir, "run"), url)
	jb.Limits.AttemptTimeout = time.Second // ends a hang; longer than an answer takes on a loaded machine
	jb.Limits.MaxAttempts = 10
	jb.Limits.BackoffMax = 100 * time.Millisecond
	rep := runJob(t, jb, Options{})
	if rep.Status != StatusFinished {
		t.Fatalf("status %q (%s), want finished", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, rows, rep)
	if rep.LLM.Total.Retries == 0 {
		t.Error("no retries in the report at a 20% fault rate")
	}
	if len(rep.LLM.Total.ErrorsByReason) == 0 {
		t.Error("no error reasons in the report")
	}
	malformed := 0
	for _, e := range srv.Log() {
		if e.Fault == sim.FaultMalformed && e.Kind != sim.KindRollout {
			malformed++
		}
	}
	if malformed > 0 && rep.Repairs[job.StageDistill]+rep.Repairs[job.StageJudge] == 0 {
		t.Errorf("%d malformed rubric or verdict replies caused no repair attempt", malformed)
	}
	kinds := map[sim.FaultKind]int{}
	for _, e := range srv.Log() {
		kinds[e.Fault]++
	}
	for _, k := range []sim.FaultKind{sim.FaultRateLimited, sim.FaultServerError, sim.FaultHang, sim.FaultTruncate, sim.FaultMalformed} {
		if kinds[k] == 0 {
			t.Errorf("no %s fault was injected; the test does not cover it", k)
		}
	}
	for id, f := range runtest.ReadFailures(t, jb.Out) {
		if f.Stage == "" || f.Reason == "" || f.Attempts < 1 {
			t.Errorf("failure %s lacks stage, reason or attempts: %+v", id, f)
		}
	}
	if rep.Problems.Done < int64(len(rows))/3 {
		t.Errorf("only %d of %d done under faults", rep.Problems.Done, len(rows))
	}
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(10)
	input := filepath.Join(dir, "in.jsonl")
	long := `{"problem": "` + strings.Repeat("x", 3000) + `", "answer": "1"}`
	runtest.WriteJSONL(t, input, rows,
		`{"problem": "unterminated`,
		`{"answer": "5"}`,
		`{"problem": "   ", "answer": "5"}`,
		"{\"problem\": \"bad \xff utf8\", \"answer\": \"1\"}",
		long,
		`[1, 2, 3]`,
		`{"problem": "What is 1+1?", "answer": 2}`,
	)
	// Duplicates of the first two problems.
	b, _ := os.ReadFile(input)
	lines := strings.SplitN(string(b), "\n", 3)
	os.WriteFile(input, append(b, []byte(lines[0]+"\n"+lines[1]+"\n")...), 0o644)

	_, url := runtest.StartSim(t, sim.Config{Answers: runtest.AnswersOf(rows)})
	job := runtest.TestJob(input, filepath.Join(dir, "run"), url)
	job.Input.MaxLineBytes = 2048
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	p := rep.Problems
	if p.BadLines != 6 {
		t.Errorf("bad lines %d, want 6: %+v", p.BadLines, rep.BadLines)
	}
	if p.Duplicates != 2 {
		t.Errorf("duplicates %d, want 2", p.Duplicates)
	}
	if p.Unique != int64(len(rows))+1 {
		t.Errorf("unique %d, want %d", p.Unique, len(rows)+1)
	}
	want := map[int]string{11: "not a JSON object", 12: `missing field "problem"`, 13: `field "problem" is empty`, 14: "UTF-8", 15: "longer than 2048 bytes", 16: "not a JSON object"}
	got := map[int]string{}
	for _, e := range rep.BadLines {
		if e.File != input {
			t.Errorf("bad line names file %q, want %q", e.File, input)
		}
		got[e.Line] = e.Reason
	}
	for line, frag := range want {
		if !strings.Contains(got[line], frag) {
			t.Errorf("line %d: reason %q, want it to mention %q", line, got[line], frag)
		}
	}
	if p.Unique != p.Done+p.Failed+p.LeftOut+p.Pending {
		t.Errorf("counts do not add up: %+v", p)
	}
}

func TestRunRefusesLockedDirectory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, sim.Config{})
	job := f.job
	holder, err := corpus.Open(job.Out, corpus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	_, err = Run(context.Background(), job, Options{})
	if !errors.Is(err, corpus.ErrLocked) {
		t.Fatalf("Run on a locked directory: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "pid") {
		t.Errorf("refusal does not say who holds the lock: %v", err)
	}
}

func TestRunBudgetStopAndResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, sim.Config{})
	rows, job := f.rows, f.job
	job.Limits.Concurrency = 4
	job.Limits.ProblemsInFlight = 2
	job.Budget.MaxTokens = 20_000
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusStopped || !strings.Contains(rep.StopReason, "budget") {
		t.Fatalf("status %q (%s), want stopped by the budget", rep.Status, rep.StopReason)
	}
	if rep.Problems.Pending == 0 {
		t.Fatal("budget stop left nothing pending; raise the problem count or lower the budget")
	}
	if rep.Problems.Unique != int64(len(rows)) {
		t.Errorf("a budget stop must still count the whole input: unique %d, want %d", rep.Problems.Unique, len(rows))
	}
	spent := rep.LLM.Total.PromptTokens + rep.LLM.Total.CompletionTokens
	if spent > 2*job.Budget.MaxTokens {
		t.Errorf("spent %d tokens against a budget of %d", spent, job.Budget.MaxTokens)
	}
	if got := len(runtest.ReadFailures(t, job.Out)); int64(got) != rep.Problems.Failed+rep.Problems.LeftOut {
		t.Errorf("budget-stopped problems must not be recorded as failures: %d lines, report %d", got, rep.Problems.Failed+rep.Problems.LeftOut)
	}

	// The same budget again: the run stops at once and sends nothing
	// (counted by its own client: see TestRunBudgetStoppedRerunSendsNothing).
	var rerun sendCounter
	again := runJob(t, job, rerun.options())
	if again.Status != StatusStopped || rerun.sent.Load() != 0 {
		t.Errorf("rerun at a spent budget: status %q, sent %d", again.Status, rerun.sent.Load())
	}

	job.Budget.MaxTokens = 0
	final := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	if final.Status != StatusFinished {
		t.Fatalf("after raising the budget: %q (%s)", final.Status, final.StopReason)
	}
	checkAccounted(t, job.Out, rows, final)
	if final.LLM.Total.PromptTokens < rep.LLM.Total.PromptTokens {
		t.Errorf("token totals must carry over sessions: %d < %d", final.LLM.Total.PromptTokens, rep.LLM.Total.PromptTokens)
	}
}

func TestRunRefusesChangedJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, sim.Config{})
	job := f.job
	runJob(t, job, Options{HTTPClient: runtest.InProcess})

	changed := job
	changed.Rollout.N = 6
	_, err := Run(context.Background(), changed, Options{HTTPClient: runtest.InProcess})
	if !errors.Is(err, ErrJobChanged) {
		t.Fatalf("changed n: %v, want ErrJobChanged", err)
	}
	if !strings.Contains(err.Error(), "\n  rollout.n: 4 → 6\n") {
		t.Errorf("refusal does not say what changed: %v", err)
	}

	// Settings that do not change records are not a change.
	same := job
	same.Limits.Concurrency = 3
	same.Output.ShardRows = 2
	if _, err := Run(context.Background(), same, Options{HTTPClient: runtest.InProcess}); err != nil {
		t.Errorf("changing concurrency and shard size was refused: %v", err)
	}

	if _, err := Run(context.Background(), changed, Options{HTTPClient: runtest.InProcess, Force: true}); err != nil {
		t.Errorf("--force: %v", err)
	}
}

func TestRunRejectsBadJob(t *testing.T) {
	t.Parallel()
	job := job.DefaultJob()
	job.Rollout.N = 0
	job.Style = "free-form"
	_, err := Run(context.Background(), job, Options{})
	if err == nil {
		t.Fatal("a job with no input, output, endpoint, n=0 and an unknown style was accepted")
	}
	for _, field := range []string{"input.paths", "out", "rollout.base_url", "rollout.model", "style", "rollout.n"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
}

func TestRunInterruptedStopsCleanly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40, sim.Config{Latency: 20 * time.Millisecond})
	rows, job := f.rows, f.job
	srv := f.srv
	job.Limits.Concurrency = 8
	job.Limits.ProblemsInFlight = 8 // so that some problems finish within the first 120 requests
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // interrupt once 120 requests, about half the work, have been asked for
		for srv.Count() < 120 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	rep, err := Run(ctx, job, Options{HTTPClient: runtest.InProcess})
	if err != nil {
		t.Fatalf("an interrupted run must not fail: %v", err)
	}
	if rep.Status != StatusStopped || rep.StopReason != "interrupted" {
		t.Fatalf("status %q (%s), want stopped: interrupted", rep.Status, rep.StopReason)
	}
	if got := len(runtest.ReadCorpus(t, job.Out)); int64(got) != rep.Problems.Done {
		t.Errorf("%d records written, report says %d done: finished work must be committed", got, rep.Problems.Done)
	}
	if rep.Problems.Done == 0 || rep.Problems.Pending == 0 {
		t.Errorf("interrupt after 120 requests: done %d pending %d; expected some of each", rep.Problems.Done, rep.Problems.Pending)
	}
	if rep.Problems.Unique != int64(len(rows)) {
		t.Errorf("after an interrupt, unique %d: the counts must be of the whole input (%d)", rep.Problems.Unique, len(rows))
	}
	final := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	checkAccounted(t, job.Out, rows, final)
}

func TestRunStopsOnFatalEndpointError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(6)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	const key = "sk-test-SECRET-0123456789"
	var sawKey atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawKey.Store(r.Header.Get("Authorization") == "Bearer "+key)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	job := runtest.TestJob(input, filepath.Join(dir, "run"), srv.URL+"/v1")
	job.Rollout.APIKeyEnv = "TEST_KEY_VAR"
	var logs strings.Builder
	rep, err := Run(context.Background(), job, Options{
		Getenv: func(name string) string {
			if name == "TEST_KEY_VAR" {
				return key
			}
			return ""
		},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a 401 must stop the run with an error naming it: %v", err)
	}
	if !sawKey.Load() {
		t.Error("the key from the named environment variable was not sent")
	}
	if rep == nil || rep.Status != StatusFailed {
		t.Fatalf("report after a fatal error: %+v", rep)
	}
	if n := len(runtest.ReadFailures(t, job.Out)); n != 0 {
		t.Errorf("a run-level error was recorded as %d problem failures", n)
	}
	var files strings.Builder
	filepath.WalkDir(job.Out, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(path, "cache.db") {
			b, _ := os.ReadFile(path)
			files.Write(b)
		}
		return nil
	})
	for where, text := range map[string]string{"error": err.Error(), "logs": logs.String(), "run directory": files.String()} {
		if strings.Contains(text, "SECRET") {
			t.Errorf("the API key leaked into the %s", where)
		}
	}
}

func TestRunStopsOnFailingEndpointAndResumesTransientFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(80) // more than the failing streak (50) that stops the run
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	jb := runtest.TestJob(input, filepath.Join(dir, "run"), down.URL+"/v1")
	jb.Rollout.N = 2 // the rollouts' number is not the subject: fewer requests when the endpoint is back
	jb.Limits.MaxAttempts = 2
	jb.Limits.BackoffMax = 5 * time.Millisecond
	jb.Limits.ProblemsInFlight = 4
	rep, err := Run(context.Background(), jb, Options{HTTPClient: runtest.InProcess})
	if err == nil || !strings.Contains(err.Error(), "keeps failing") {
		t.Fatalf("a dead endpoint must stop the run: %v", err)
	}
	if rep.Problems.Failed >= int64(len(rows)) || rep.Problems.Failed < transientStreakLimit {
		t.Errorf("failed %d of %d: the run should stop after about %d", rep.Problems.Failed, len(rows), transientStreakLimit)
	}
	for id, f := range runtest.ReadFailures(t, jb.Out) {
		if !f.Transient || f.Stage != job.StageRollout {
			t.Errorf("failure %s should be a transient rollout failure: %+v", id, f)
		}
	}

	// The endpoint is back: a plain resume (no --retry-failed) finishes everything.
	_, url := runtest.StartSim(t, sim.Config{Answers: runtest.AnswersOf(rows)})
	jb.Rollout.BaseURL = url
	jb.Distill.BaseURL, jb.Judge.BaseURL, jb.Empirical.BaseURL = "", "", ""
	final := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if final.Status != StatusFinished {
		t.Fatalf("resume: %s (%s)", final.Status, final.StopReason)
	}
	checkAccounted(t, jb.Out, rows, final)
	if final.FailuresByStage[job.StageRollout] != 0 {
		t.Errorf("transient rollout failures were not retried: %v", final.FailuresByStage)
	}
}

// TestLegacyMaxTokens: the token limit goes out as max_completion_tokens, or
// as max_tokens for servers that only know that field.
func TestLegacyMaxTokens(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{false, true} {
		f := newFixture(t, 2, sim.Config{})
		var legacyField, newField atomic.Int64
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"max_tokens":`)) {
				legacyField.Add(1)
			}
			if bytes.Contains(body, []byte(`"max_completion_tokens":`)) {
				newField.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			f.srv.ServeHTTP(w, r)
		}))
		job := f.job
		job.Rollout.BaseURL = proxy.URL + "/v1"
		job.Rollout.MaxTokens = 2048
		job.Rollout.LegacyMaxTokens = legacy
		runJob(t, job, Options{HTTPClient: runtest.InProcess})
		proxy.Close()
		rollouts := int64(2 * job.Rollout.N)
		if legacy && (legacyField.Load() != rollouts || newField.Load() != 0) {
			t.Errorf("legacy: max_tokens in %d requests, max_completion_tokens in %d; want %d and 0", legacyField.Load(), newField.Load(), rollouts)
		}
		if !legacy && (newField.Load() != rollouts || legacyField.Load() != 0) {
			t.Errorf("default: max_completion_tokens in %d requests, max_tokens in %d; want %d and 0", newField.Load(), legacyField.Load(), rollouts)
		}
	}
}

// TestRunStopsWhenNothingListens: with nothing listening at the endpoint,
// the run stops after a short streak of connection failures, with one
// message that says so.
func TestRunStopsWhenNothingListens(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // the port is now closed: connections are refused
	// Refusals are instant, so the problems that fail before the collector
	// sees the streak depend on scheduling (150 of them on a loaded 2-core
	// machine); the input is large enough that stopping early stays
	// distinguishable from failing everything.
	f := newFixture(t, 1000, sim.Config{})
	job := f.job
	job.Rollout.BaseURL = url
	job.Limits.MaxAttempts = 2
	job.Limits.BackoffMax = 5 * time.Millisecond
	rep, err := Run(context.Background(), job, Options{})
	if err == nil || !strings.Contains(err.Error(), "nothing answers at "+url) {
		t.Fatalf("a run against a closed port: %v", err)
	}
	if strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("the message is not one line: %q", err)
	}
	if rep.Status != StatusFailed || rep.Problems.Failed >= int64(len(f.rows))/2 {
		t.Errorf("status %s after %d failed problems: the run should stop after a short streak", rep.Status, rep.Problems.Failed)
	}
	for id, fl := range runtest.ReadFailures(t, job.Out) {
		if !fl.Transient {
			t.Errorf("failure %s is not transient, so a resume would not retry it: %+v", id, fl)
		}
	}
}
