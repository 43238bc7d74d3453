package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// kindsSent counts the endpoint's log entries by template kind, from entry from on.
func kindsSent(srv *sim.Server, from int) map[sim.Kind]int {
	out := map[sim.Kind]int{}
	for _, e := range srv.Log()[from:] {
		out[e.Kind]++
	}
	return out
}

// TestChangedJudgeTemplateRerunsJudgingOnly: each stage's request embeds the
// previous stage's output, so a new run with a new judge template that shares
// the first run's cache (job.Cache) sends judge requests only.
func TestChangedJudgeTemplateRerunsJudgingOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20, sim.Config{KeepLog: true})
	dir, job := f.dir, f.job
	srv := f.srv
	first := runJob(t, job, Options{HTTPClient: runtest.InProcess})

	// A new run directory sharing the first run's cache, with an edited judge template.
	promptsDir := filepath.Join(dir, "prompts")
	os.Mkdir(promptsDir, 0o755)
	b, err := os.ReadFile("../prompts/templates/judge_batch.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "Decide, for each rubric item below,", "For each rubric item below, decide carefully", 1)
	if edited == string(b) {
		t.Fatal("the judge template no longer has the sentence this test edits")
	}
	os.WriteFile(filepath.Join(promptsDir, "judge_batch.tmpl"), []byte(edited), 0o644)

	second := job
	second.Out = filepath.Join(dir, "run2")
	second.PromptsDir = promptsDir
	second.Cache = filepath.Join(job.Out, "cache.db")
	from := len(srv.Log())
	rep := runJob(t, second, Options{HTTPClient: runtest.InProcess})
	sent := kindsSent(srv, from)
	if sent[sim.KindJudgeBatch] == 0 {
		t.Fatal("no judge request was sent with a new judge template")
	}
	if sent[sim.KindRollout]+sent[sim.KindDistillSRaR] != 0 {
		t.Errorf("a new judge template re-sent other stages: %v", sent)
	}
	if rep.Problems.Done != first.Problems.Done {
		t.Errorf("done %d, first run %d", rep.Problems.Done, first.Problems.Done)
	}
}

// TestRaisingNReusesRollouts: with one request per sample, raising n from 4
// to 8 sends only the 4 new samples of each problem.
func TestRaisingNReusesRollouts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, sim.Config{KeepLog: true})
	dir, rows, jb := f.dir, f.rows, f.job
	srv := f.srv
	jb.Selection = job.Selection{}
	runJob(t, jb, Options{HTTPClient: runtest.InProcess})

	more := jb
	more.Out = filepath.Join(dir, "run8")
	more.Rollout.N = 8
	more.Cache = filepath.Join(jb.Out, "cache.db")
	from := len(srv.Log())
	runJob(t, more, Options{HTTPClient: runtest.InProcess})
	if got := kindsSent(srv, from)[sim.KindRollout]; got != 4*len(rows) {
		t.Errorf("raising n from 4 to 8 sent %d rollout requests, want %d (only the new samples)", got, 4*len(rows))
	}
}

// TestParquetInput reads problems from a Parquet file with its own column names.
func TestParquetInput(t *testing.T) {
	t.Parallel()
	type row struct {
		Question string  `parquet:"question"`
		Gold     string  `parquet:"gold"`
		Key      *string `parquet:"key,optional"`
		Ref      *string `parquet:"ref,optional"`
	}
	dir := t.TempDir()
	rows := runtest.MakeProblems(12)
	var prow []row
	for i, r := range rows {
		p := row{Question: r.Problem, Gold: r.Answer}
		if i%2 == 0 {
			k := "pq-" + string(rune('a'+i))
			p.Key = &k
			rows[i].ID = k
		}
		prow = append(prow, p)
	}
	prow = append(prow, row{Question: "", Gold: "1"}) // a bad row: empty problem
	input := filepath.Join(dir, "in.parquet")
	if err := parquet.WriteFile(input, prow); err != nil {
		t.Fatal(err)
	}
	_, url := runtest.StartSim(t, sim.Config{Answers: runtest.AnswersOf(rows)})
	jb := runtest.TestJob(input, filepath.Join(dir, "run"), url)
	jb.Input.Fields = job.Fields{Problem: "question", Answer: "gold", ID: "key", Reference: "ref"}
	rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	if rep.Problems.BadLines != 1 || len(rep.BadLines) != 1 || rep.BadLines[0].Line != 13 {
		t.Errorf("bad rows: %d %+v, want row 13", rep.Problems.BadLines, rep.BadLines)
	}
	checkAccounted(t, jb.Out, rows, rep)

	jb.Input.Fields.Problem = "prompt"
	if _, err := Run(t.Context(), jb, Options{HTTPClient: runtest.InProcess, Force: true}); err == nil || !strings.Contains(err.Error(), `no column "prompt"`) {
		t.Errorf("a missing column: %v", err)
	}
}

// TestBaseCacheIsReadNeverWritten: a variant run that names another run's
// cache (--cache) reads it and never writes it; what it read is copied into
// its own cache, so its resume needs no base; two variants share one base
// at once.
func TestBaseCacheIsReadNeverWritten(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, sim.Config{KeepLog: true})
	runJob(t, f.job, Options{HTTPClient: runtest.InProcess})
	basePath := filepath.Join(f.job.Out, "cache.db")
	before, err := os.ReadFile(basePath)
	if err != nil {
		t.Fatal(err)
	}

	variants := make([]job.Job, 2)
	errs := make(chan error, len(variants))
	reports := make([]*Report, len(variants))
	from := len(f.srv.Log())
	for i := range variants {
		v := f.job
		v.Out = filepath.Join(f.dir, fmt.Sprintf("variant%d", i))
		v.Rollout.N = 6 // 2 new samples per problem; the first 4 come from the base
		v.Cache = basePath
		variants[i] = v
		go func() {
			var err error
			reports[i], err = Run(context.Background(), v, Options{HTTPClient: runtest.InProcess})
			errs <- err
		}()
	}
	for range variants {
		if err := <-errs; err != nil {
			t.Fatalf("a variant sharing the base cache: %v", err)
		}
	}
	if got := kindsSent(f.srv, from)[sim.KindRollout]; got > 2*2*len(f.rows) {
		t.Errorf("two variants sent %d rollout requests; the base held 4 of each problem's 6", got)
	}
	after, err := os.ReadFile(basePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the base cache changed (%d bytes, now %d): a variant wrote into it", len(before), len(after))
	}

	if err := os.RemoveAll(f.job.Out); err != nil {
		t.Fatal(err)
	}
	from = len(f.srv.Log())
	again := runJob(t, variants[0], Options{HTTPClient: runtest.InProcess})
	if sent := len(f.srv.Log()) - from; sent != 0 {
		t.Errorf("resuming a variant after its base was deleted sent %d requests", sent)
	}
	if again.Problems.Done != reports[0].Problems.Done {
		t.Errorf("the resumed variant holds %d problems, %d before", again.Problems.Done, reports[0].Problems.Done)
	}
}

// TestRetryFailedAsksAgainAfterMalformedReplies: replies that never parsed
// (after their repairs) are not answers to replay: --retry-failed sends
// fresh distill requests and the problems succeed; a plain resume before it
// pays for nothing.
func TestRetryFailedAsksAgainAfterMalformedReplies(t *testing.T) {
	t.Parallel()
	f, tap, opt := inProcessFixture(t, 12, sim.Config{})
	var mu sync.Mutex
	broken, distillSent := true, 0
	tap.handle = func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
		if kind != sim.KindDistillSRaR { // repair turns too: they carry the distill prompt
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		distillSent++
		if broken {
			return chatReply(r, "I would rather not write a rubric."), nil
		}
		return nil, nil
	}
	first, err := Run(context.Background(), f.job, opt)
	if err != nil {
		t.Fatal(err)
	}
	if first.FailuresByStage[job.StageDistill] == 0 {
		t.Fatalf("no problem failed at distill with malformed replies: %+v", first.FailuresByStage)
	}

	mu.Lock()
	broken, distillSent = false, 0
	mu.Unlock()
	plain, err := Run(context.Background(), f.job, opt)
	if err != nil {
		t.Fatal(err)
	}
	if distillSent != 0 || plain.Problems.Failed != first.Problems.Failed {
		t.Errorf("a plain resume sent %d distill requests; failed %d, before %d", distillSent, plain.Problems.Failed, first.Problems.Failed)
	}

	retried, err := Run(context.Background(), f.job, Options{HTTPClient: opt.HTTPClient, RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	if distillSent < int(first.FailuresByStage[job.StageDistill]) {
		t.Errorf("--retry-failed sent %d distill requests for %d problems that failed on malformed replies", distillSent, first.FailuresByStage[job.StageDistill])
	}
	if retried.FailuresByStage[job.StageDistill] != 0 {
		t.Errorf("after --retry-failed %d problems still fail at distill: the malformed replies were replayed", retried.FailuresByStage[job.StageDistill])
	}
}
