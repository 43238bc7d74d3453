package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// comparable is a record without what differs between two runs that got
// the same answers: when it was made, and what it cost.
func comparable(t *testing.T, r *schema.Record) string {
	t.Helper()
	c := *r
	c.Provenance.CreatedAt = time.Time{}
	c.Usage = schema.Usage{}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBatchRunEqualsOnline: every stage through batches gives the records an
// online run gives from the same answers, at half the cost, with no request
// answered twice, and the report and status line show the batches: for a
// math style (with replies that need repair, which go into the next wave)
// and for the grounded style.
func TestBatchRunEqualsOnline(t *testing.T) {
	t.Parallel()
	t.Run("srar", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		rows := runtest.MakeProblems(12)
		input := filepath.Join(dir, "in.jsonl")
		runtest.WriteJSONL(t, input, rows)
		cfg := sim.Config{Seed: 3, Answers: runtest.AnswersOf(rows), FaultsByRequest: true, Faults: sim.Faults{Malformed: 0.1}}
		job := func(out, url string) job.Job { return runtest.BatchJob(input, filepath.Join(dir, out), url) }
		onRep, bRep := compareOnlineBatch(t, cfg, job, 10)
		checkAccounted(t, filepath.Join(dir, "batch"), rows, bRep)
		if onRep.LLM.Total.Repairs == 0 {
			t.Error("no reply needed a repair: the test does not cover repairs in a later wave")
		}
	})
	t.Run("factual_process", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		rows := runtest.MakeProblems(8)
		input := filepath.Join(dir, "in.jsonl")
		runtest.WriteJSONL(t, input, rows)
		cfg := sim.Config{Seed: 4, Answers: runtest.AnswersOf(rows)}
		job := func(out, url string) job.Job {
			j := runtest.BatchJob(input, filepath.Join(dir, out), url)
			j.Style = schema.StyleFactualProcess
			return j
		}
		_, bRep := compareOnlineBatch(t, cfg, job, 7)
		checkAccounted(t, filepath.Join(dir, "batch"), rows, bRep)
	})
	t.Run("grounded", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		docs := filepath.Join(dir, "docs")
		runtest.WriteDocs(t, docs, 4)
		cfg := sim.Config{Seed: 5, FaultsByRequest: true, Faults: sim.Faults{Malformed: 0.05}}
		job := func(out, url string) job.Job {
			j := runtest.GroundedTestJob(docs, filepath.Join(dir, out), url)
			j.Batch.PollInterval = 10 * time.Millisecond
			return j
		}
		_, bRep := compareOnlineBatch(t, cfg, job, 8)
		checkGroundedAccounted(t, job("batch", ""), bRep)
	})
}

// compareOnlineBatch runs job online, then with every stage in batch mode
// (files of at most maxRows), against two simulated endpoints with cfg,
// and checks that the records are the same, the batch run cost half, and
// no request was answered twice.
func compareOnlineBatch(t *testing.T, cfg sim.Config, jb func(out, url string) job.Job, maxRows int) (onRep, bRep *Report) {
	t.Helper()
	if cfg.BatchTurnaround == 0 {
		cfg.BatchTurnaround = 30 * time.Millisecond
	}
	_, onlineURL := runtest.StartSim(t, cfg)
	onJob := jb("online", onlineURL)
	onRep = runJob(t, onJob, Options{HTTPClient: runtest.InProcess})

	batch, batchURL := runtest.StartSim(t, cfg)
	bJob := jb("batch", batchURL)
	for _, ep := range bJob.BatchSections() {
		ep.Mode = job.ModeBatch
	}
	bJob.Batch.MaxRequests = maxRows // several files per wave
	bRep = runJob(t, bJob, Options{HTTPClient: runtest.InProcess})
	if bRep.Status != StatusFinished {
		t.Fatalf("batch run %s: %s", bRep.Status, bRep.StopReason)
	}
	onRecs, bRecs := runtest.ReadCorpus(t, onJob.Out), runtest.ReadCorpus(t, bJob.Out)
	if len(onRecs) == 0 || len(onRecs) != len(bRecs) {
		t.Fatalf("online %d records, batch %d", len(onRecs), len(bRecs))
	}
	for id, r := range onRecs {
		b, ok := bRecs[id]
		if !ok {
			t.Errorf("record %s only online", id)
			continue
		}
		if comparable(t, r) != comparable(t, b) {
			t.Errorf("record %s differs:\nonline %s\nbatch  %s", id, comparable(t, r), comparable(t, b))
		}
	}
	if n := batch.Count(); n != 0 {
		t.Errorf("%d online requests in a run whose every stage is in batch mode", n)
	}
	st := batch.BatchStats()
	if st.RequestsRepeated != 0 || st.CustomIDsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
	if st.BatchesCreated < 5 {
		t.Errorf("%d batches: want a wave per stage, split at %d rows", st.BatchesCreated, maxRows)
	}
	on, b := onRep.LLM.Total, bRep.LLM.Total
	if b.PromptTokens != on.PromptTokens || b.CompletionTokens != on.CompletionTokens {
		t.Errorf("tokens online %d+%d, batch %d+%d: the same answers should cost the same tokens", on.PromptTokens, on.CompletionTokens, b.PromptTokens, b.CompletionTokens)
	}
	if want := on.CostUSD * llm.DefaultBatchRate; math.Abs(b.CostUSD-want) > 1e-9*want {
		t.Errorf("batch cost $%.6f, want half the online $%.6f", b.CostUSD, on.CostUSD)
	}
	if b.Repairs != on.Repairs {
		t.Errorf("%d repairs in batches, %d online: a repair replayed in a later wave was counted again", b.Repairs, on.Repairs)
	}
	if b.BatchAnswers != b.Requests || b.Requests != on.Requests {
		t.Errorf("batch answers %d of %d requests; online %d requests", b.BatchAnswers, b.Requests, on.Requests)
	}
	if bRep.Batches == nil || bRep.Batches.Completed != int(st.BatchesCreated) || bRep.Batches.InProgress != 0 {
		t.Errorf("report batches %+v, simulator made %d", bRep.Batches, st.BatchesCreated)
	}
	states, err := llm.ReadBatchStates(batchDir(bJob.Out))
	if err != nil || len(states) != int(st.BatchesCreated) {
		t.Fatalf("journal: %d states (%v), want %d", len(states), err, st.BatchesCreated)
	}
	for _, s := range states {
		if s.Phase != llm.PhaseIngested || s.BatchID == "" || s.Answered != s.Rows {
			t.Errorf("journal state %+v", s)
		}
	}
	if line := (statusLine{batches: bRep.Batches.String()}).String(); !strings.Contains(line, "batches: ") || !strings.Contains(line, " completed") {
		t.Errorf("status line %q does not show the batches", line)
	}
	return onRep, bRep
}

// rowsByStage adds up the journal's rows by stage.
func rowsByStage(t *testing.T, out string) ([]llm.BatchState, map[string]int) {
	t.Helper()
	states, err := llm.ReadBatchStates(batchDir(out))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for _, s := range states {
		for st, n := range s.Stages {
			by[st] += n
		}
	}
	return states, by
}

// TestBatchExpiredResubmitsOnlyMissingRows: the first batch expires having
// answered half its rows; only the other half is asked again, and nothing
// is paid twice.
func TestBatchExpiredResubmitsOnlyMissingRows(t *testing.T) {
	t.Parallel()
	srv, jb, rows := runtest.BatchSetup(t, 15, sim.Config{BatchExpire: 1}, job.StageRollout, job.StageDistill, job.StageJudge)
	jb.Empirical.Enabled = false
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, rows, rep)
	st := srv.BatchStats()
	if st.Batches["expired"] != 1 || st.RowsExpired == 0 {
		t.Fatalf("simulator: %+v; want one expired batch", st)
	}
	if st.RequestsRepeated != 0 || st.CustomIDsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
	states, by := rowsByStage(t, jb.Out)
	first := states[0]
	if first.Status != "expired" || first.Answered != first.Rows/2 || first.Failed+first.Missing != first.Rows-first.Rows/2 {
		t.Errorf("expired batch in the journal: %+v", first)
	}
	// Rollout requests: one per sample (per_request 1) per problem; the
	// expired rows were sent once more, and nothing else was.
	want := len(rows)*jb.Rollout.N + (first.Rows - first.Answered)
	if by[job.StageRollout] != want {
		t.Errorf("%d rollout rows over every batch, want %d (%d requests and the %d the expired batch did not answer)",
			by[job.StageRollout], want, len(rows)*jb.Rollout.N, first.Rows-first.Answered)
	}
}

// TestBatchFailedRowsRetried: rows a batch answers with a 500 go into a
// later batch, until answered.
func TestBatchFailedRowsRetried(t *testing.T) {
	t.Parallel()
	srv, job, rows := runtest.BatchSetup(t, 15, sim.Config{BatchRowFailRate: 0.15}, job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical)
	job.Batch.MaxRowAttempts = 6
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, job.Out, rows, rep)
	st := srv.BatchStats()
	if st.RowsFailed == 0 {
		t.Fatalf("no row failed: %+v", st)
	}
	if st.RequestsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
	states, _ := rowsByStage(t, job.Out)
	failed, rowsSent, answered := 0, 0, 0
	for _, s := range states {
		failed += s.Failed
		rowsSent += s.Rows
		answered += s.Answered
	}
	if int64(failed) != st.RowsFailed || rowsSent != answered+failed {
		t.Errorf("journal: %d rows sent, %d answered, %d failed; simulator failed %d", rowsSent, answered, failed, st.RowsFailed)
	}
	if len(runtest.ReadFailures(t, job.Out)) != int(rep.Problems.LeftOut) {
		t.Errorf("problems failed although every failed row was retried: %v", rep.FailuresByStage)
	}
}

// TestBatchMixedMode: rollouts online, distill and judge in batches, in one
// run.
func TestBatchMixedMode(t *testing.T) {
	t.Parallel()
	srv, jb, rows := runtest.BatchSetup(t, 12, sim.Config{KeepLog: true}, job.StageDistill, job.StageJudge)
	jb.Empirical.Enabled = false
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, rows, rep)
	if rep.Problems.Done == 0 {
		t.Fatal("no record")
	}
	for _, e := range srv.Log() {
		if e.Kind != sim.KindRollout {
			t.Fatalf("online request of kind %s; only rollouts go online", e.Kind)
		}
	}
	if got, want := srv.Count(), int64(len(rows)*jb.Rollout.N); got != want {
		t.Errorf("%d online requests, want the %d rollouts", got, want)
	}
	_, by := rowsByStage(t, jb.Out)
	if by[job.StageRollout] != 0 || by[job.StageDistill] == 0 || by[job.StageJudge] == 0 {
		t.Errorf("batch rows by stage %v; want distill and judge only", by)
	}
	s := rep.LLM.Stages
	if s[job.StageRollout].BatchAnswers != 0 || s[job.StageDistill].BatchAnswers != s[job.StageDistill].Requests {
		t.Errorf("batch answers: rollout %d, distill %d of %d", s[job.StageRollout].BatchAnswers, s[job.StageDistill].BatchAnswers, s[job.StageDistill].Requests)
	}
}

// TestBatchKilledWhilePending: SIGKILL while batches wait at the provider,
// at several moments of one run; each resume polls the batches the journal
// names and creates none of them again, and no request is answered twice.
func TestBatchKilledWhilePending(t *testing.T) {
	t.Parallel()
	srv, job, rows := runtest.BatchSetup(t, 40, sim.Config{BatchTurnaround: 400 * time.Millisecond, BatchRowFailRate: 0.05}, job.StageRollout, job.StageDistill, job.StageJudge)
	job.Empirical.Enabled = false
	job.Batch.MaxRequests = 50
	job.Batch.PollInterval = 20 * time.Millisecond
	jobFile := filepath.Join(filepath.Dir(job.Out), "job.yaml")
	job = writeJobFile(t, jobFile, job)
	kills := 0
	for cycle := range 4 {
		created := srv.BatchStats().BatchesCreated
		// Kill once this process has a batch of its own in progress.
		killed := runChildUntil(t, jobFile, func() bool {
			return srv.BatchStats().BatchesCreated > created && srv.BatchStats().Batches["in_progress"] > 0
		})
		if killed {
			kills++
		}
		t.Logf("cycle %d: killed=%v with %+v", cycle, killed, srv.BatchStats().Batches)
	}
	if kills == 0 {
		t.Fatal("no run was killed while its batches were pending")
	}
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("final run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, job.Out, rows, rep)
	st := srv.BatchStats()
	states, _ := rowsByStage(t, job.Out)
	ids := map[string]bool{}
	for _, s := range states {
		if s.BatchID != "" {
			if ids[s.BatchID] {
				t.Errorf("batch %s recorded twice", s.BatchID)
			}
			ids[s.BatchID] = true
		}
	}
	if int64(len(ids)) != st.BatchesCreated {
		t.Errorf("the simulator created %d batches, the journal knows %d: a batch was made again or lost", st.BatchesCreated, len(ids))
	}
	if st.RequestsRepeated != 0 || st.CustomIDsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d requests went online", n)
	}
}

// TestBatchBudgetStopsSubmitting: with a budget that the next wave's
// projection passes, the run stops before submitting it, having spent no
// more than the budget, and says so; raising the budget finishes the run.
func TestBatchBudgetStopsSubmitting(t *testing.T) {
	t.Parallel()
	srv, jb, rows := runtest.BatchSetup(t, 30, sim.Config{}, job.StageRollout, job.StageDistill, job.StageJudge)
	jb.Empirical.Enabled = false
	jb.Prices = map[string]job.Price{"simulated": {Prompt: 100, Completion: 200}}
	created := srv.BatchStats().BatchesCreated

	jb.Budget.MaxCostUSD = 0.05 // covers the rollouts, not the distill wave
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusStopped || rep.StoppedBy != StopBudget || !strings.Contains(rep.StopReason, "batch") {
		t.Fatalf("run %s by %q: %s; want stopped by the budget before a batch", rep.Status, rep.StoppedBy, rep.StopReason)
	}
	if rep.LLM.Total.CostUSD > jb.Budget.MaxCostUSD {
		t.Errorf("spent $%.4f over the $%.2f budget", rep.LLM.Total.CostUSD, jb.Budget.MaxCostUSD)
	}
	states, _ := rowsByStage(t, jb.Out)
	dropped := 0
	for _, s := range states {
		if s.Phase == llm.PhaseDropped {
			dropped++
		}
	}
	if dropped == 0 {
		t.Errorf("no batch held back in the journal: %+v", states)
	}
	if made := srv.BatchStats().BatchesCreated - created; int(made) != len(states)-dropped {
		t.Errorf("simulator created %d batches, journal submitted %d", made, len(states)-dropped)
	}

	jb.Budget.MaxCostUSD = 100
	rep = runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("after raising the budget: %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, rows, rep)
	if st := srv.BatchStats(); st.RequestsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
}

// TestBatchRepairsOnline: with batch.repairs online, an unparseable batch
// answer is repaired at once, online, and only repairs go online.
func TestBatchRepairsOnline(t *testing.T) {
	t.Parallel()
	srv, jb, rows := runtest.BatchSetup(t, 15, sim.Config{KeepLog: true, FaultsByRequest: true, Faults: sim.Faults{Malformed: 0.15}}, job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical)
	jb.Batch.Repairs = job.ModeOnline
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, rows, rep)
	online := srv.Log()
	if len(online) == 0 || rep.LLM.Total.Repairs == 0 {
		t.Fatalf("%d online requests, %d repairs: no repair went online", len(online), rep.LLM.Total.Repairs)
	}
	for _, e := range online {
		if !e.Repair {
			t.Fatalf("an online request of kind %s is not a repair", e.Kind)
		}
	}
	if st := srv.BatchStats(); st.RequestsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
}

// TestBatchAfterOnline: a run stopped online (its budget) and resumed in
// batch mode sends none of the requests answered online into a batch.
func TestBatchAfterOnline(t *testing.T) {
	t.Parallel()
	srv, jb, rows := runtest.BatchSetup(t, 20, sim.Config{})
	jb.Budget.MaxCostUSD = 0.01
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.StoppedBy != StopBudget || srv.Count() == 0 {
		t.Fatalf("online run %s by %q after %d requests; want it stopped by the budget partway", rep.Status, rep.StoppedBy, srv.Count())
	}
	jb.Budget.MaxCostUSD = 0
	for _, ep := range jb.BatchSections() {
		ep.Mode = job.ModeBatch
	}
	rep = runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("batch resume %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, rows, rep)
	if st := srv.BatchStats(); st.RequestsRepeated != 0 || st.BatchesCreated == 0 {
		t.Errorf("%d requests answered online and again in a batch (%d batches)", st.RequestsRepeated, st.BatchesCreated)
	}
}

// TestBatchProviderFull: a provider that refuses new batches for a while
// (429 on create) and fails one for its queue limit (token_limit_exceeded)
// slows the run down but fails nothing: the refused files wait and go
// later, and the failed batch's rows are asked again without counting as
// failures (one counted failure would fail a problem here).
func TestBatchProviderFull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(20)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	simulator := sim.New(sim.Config{Answers: runtest.AnswersOf(rows), BatchTurnaround: 20 * time.Millisecond})
	defer simulator.Close()
	var creates, reads atomic.Int64
	full := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/batches" && creates.Add(1) <= 3:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error": {"message": "too many open batches", "type": "rate_limit_exceeded"}}`)
			return
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/batches/") && reads.Add(1) == 1:
			id := strings.TrimPrefix(r.URL.Path, "/v1/batches/")
			fmt.Fprintf(w, `{"id": %q, "object": "batch", "status": "failed", "request_counts": {"total": 0, "completed": 0, "failed": 0},
				"errors": {"object": "list", "data": [{"code": "token_limit_exceeded", "message": "Enqueued token limit reached for simulated."}]}}`, id)
			return
		}
		simulator.ServeHTTP(w, r)
	}))
	defer full.Close()
	job := runtest.BatchJob(input, filepath.Join(dir, "run"), full.URL+"/v1", job.StageRollout, job.StageDistill, job.StageJudge)
	job.Empirical.Enabled = false
	job.Batch.MaxRowAttempts = 1
	job.Limits.MaxAttempts = 2
	job.Limits.BackoffMax = 10 * time.Millisecond
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, job.Out, rows, rep)
	if rep.Problems.Failed != 0 {
		t.Errorf("%d problems failed: %v", rep.Problems.Failed, rep.FailuresByStage)
	}
	states, _ := rowsByStage(t, job.Out)
	if states[0].Status != "failed" || !strings.Contains(states[0].Note, "token_limit_exceeded") {
		t.Errorf("first batch %+v: want failed for the queue limit, with the reason noted", states[0])
	}
	if creates.Load() <= 3 {
		t.Errorf("%d creates: the refusals were not met", creates.Load())
	}
}
