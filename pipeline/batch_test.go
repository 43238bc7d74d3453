package pipeline

import (
	"encoding/json"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// batchJob is testJob with the given stages in batch mode, polling fast.
func batchJob(input, out, url string, stages ...string) Job {
	j := testJob(input, out, url)
	j.Judge.Enabled = true
	j.Empirical.Enabled = true
	j.Batch.PollInterval = 10 * time.Millisecond
	for _, s := range stages {
		j.batchSections()[s].Mode = ModeBatch
	}
	return j
}

// batchSim is a simulated endpoint with a Batch API that answers a batch
// after turnaround.
func batchSim(t *testing.T, rows []testProblem, cfg llmtest.Config) (*llmtest.Server, string) {
	t.Helper()
	cfg.Answers = answersOf(rows)
	if cfg.BatchTurnaround == 0 {
		cfg.BatchTurnaround = 30 * time.Millisecond
	}
	return startSim(t, cfg)
}

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
// answered twice, and the report and status line show the batches.
func TestBatchRunEqualsOnline(t *testing.T) {
	dir := t.TempDir()
	rows := makeProblems(40)
	input := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, input, rows)

	_, onlineURL := batchSim(t, rows, llmtest.Config{Seed: 3})
	onJob := batchJob(input, filepath.Join(dir, "online"), onlineURL)
	onRep := runJob(t, onJob, Options{})

	batch, batchURL := batchSim(t, rows, llmtest.Config{Seed: 3})
	bJob := batchJob(input, filepath.Join(dir, "batch"), batchURL, StageRollout, StageDistill, StageJudge, StageEmpirical)
	bJob.Batch.MaxRequests = 37 // several files per wave
	bRep := runJob(t, bJob, Options{Logger: testLogger(t)})

	if bRep.Status != StatusFinished {
		t.Fatalf("batch run %s: %s", bRep.Status, bRep.StopReason)
	}
	checkAccounted(t, bJob.Out, rows, bRep)
	onRecs, bRecs := readCorpus(t, onJob.Out), readCorpus(t, bJob.Out)
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
		t.Errorf("%d batches: want a wave per stage, split at 37 rows", st.BatchesCreated)
	}
	on, b := onRep.LLM.Total, bRep.LLM.Total
	if b.PromptTokens != on.PromptTokens || b.CompletionTokens != on.CompletionTokens {
		t.Errorf("tokens online %d+%d, batch %d+%d: the same answers should cost the same tokens", on.PromptTokens, on.CompletionTokens, b.PromptTokens, b.CompletionTokens)
	}
	if want := on.CostUSD * llm.DefaultBatchRate; math.Abs(b.CostUSD-want) > 1e-9*want {
		t.Errorf("batch cost $%.6f, want half the online $%.6f", b.CostUSD, on.CostUSD)
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
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
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
	dir := t.TempDir()
	rows := makeProblems(30)
	input := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, input, rows)
	srv, url := batchSim(t, rows, llmtest.Config{BatchExpire: 1})
	job := batchJob(input, filepath.Join(dir, "run"), url, StageRollout, StageDistill, StageJudge)
	job.Empirical.Enabled = false
	rep := runJob(t, job, Options{})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, job.Out, rows, rep)
	st := srv.BatchStats()
	if st.Batches["expired"] != 1 || st.RowsExpired == 0 {
		t.Fatalf("simulator: %+v; want one expired batch", st)
	}
	if st.RequestsRepeated != 0 || st.CustomIDsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
	states, by := rowsByStage(t, job.Out)
	first := states[0]
	if first.Status != "expired" || first.Answered != first.Rows/2 || first.Failed+first.Missing != first.Rows-first.Rows/2 {
		t.Errorf("expired batch in the journal: %+v", first)
	}
	// Rollout requests: one per sample (per_request 1) per problem; the
	// expired rows were sent once more, and nothing else was.
	want := len(rows)*job.Rollout.N + (first.Rows - first.Answered)
	if by[StageRollout] != want {
		t.Errorf("%d rollout rows over every batch, want %d (%d requests and the %d the expired batch did not answer)",
			by[StageRollout], want, len(rows)*job.Rollout.N, first.Rows-first.Answered)
	}
}

// TestBatchFailedRowsRetried: rows a batch answers with a 500 go into a
// later batch, until answered.
func TestBatchFailedRowsRetried(t *testing.T) {
	dir := t.TempDir()
	rows := makeProblems(30)
	input := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, input, rows)
	srv, url := batchSim(t, rows, llmtest.Config{BatchRowFailRate: 0.15})
	job := batchJob(input, filepath.Join(dir, "run"), url, StageRollout, StageDistill, StageJudge, StageEmpirical)
	job.Batch.MaxRowAttempts = 6
	rep := runJob(t, job, Options{})
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
	if len(readFailures(t, job.Out)) != int(rep.Problems.LeftOut) {
		t.Errorf("problems failed although every failed row was retried: %v", rep.FailuresByStage)
	}
}

// TestBatchMixedMode: rollouts online, distill and judge in batches, in one
// run.
func TestBatchMixedMode(t *testing.T) {
	dir := t.TempDir()
	rows := makeProblems(30)
	input := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, input, rows)
	srv, url := batchSim(t, rows, llmtest.Config{KeepLog: true})
	job := batchJob(input, filepath.Join(dir, "run"), url, StageDistill, StageJudge)
	job.Empirical.Enabled = false
	rep := runJob(t, job, Options{})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, job.Out, rows, rep)
	if rep.Problems.Done == 0 {
		t.Fatal("no record")
	}
	for _, e := range srv.Log() {
		if e.Kind != llmtest.KindRollout {
			t.Fatalf("online request of kind %s; only rollouts go online", e.Kind)
		}
	}
	if got, want := srv.Count(), int64(len(rows)*job.Rollout.N); got != want {
		t.Errorf("%d online requests, want the %d rollouts", got, want)
	}
	_, by := rowsByStage(t, job.Out)
	if by[StageRollout] != 0 || by[StageDistill] == 0 || by[StageJudge] == 0 {
		t.Errorf("batch rows by stage %v; want distill and judge only", by)
	}
	s := rep.LLM.Stages
	if s[StageRollout].BatchAnswers != 0 || s[StageDistill].BatchAnswers != s[StageDistill].Requests {
		t.Errorf("batch answers: rollout %d, distill %d of %d", s[StageRollout].BatchAnswers, s[StageDistill].BatchAnswers, s[StageDistill].Requests)
	}
}
