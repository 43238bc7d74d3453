package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/llmtest"
)

// kindsSent counts the endpoint's log entries by template kind, from entry from on.
func kindsSent(srv *llmtest.Server, from int) map[llmtest.Kind]int {
	out := map[llmtest.Kind]int{}
	for _, e := range srv.Log()[from:] {
		out[e.Kind]++
	}
	return out
}

// TestChangedJudgeTemplateRerunsJudgingOnly: each stage's request embeds the
// previous stage's output, so a new run with a new judge template that shares
// the first run's cache (job.Cache) sends judge requests only.
func TestChangedJudgeTemplateRerunsJudgingOnly(t *testing.T) {
	f := newFixture(t, 20, llmtest.Config{KeepLog: true})
	dir, job := f.dir, f.job
	srv := f.srv
	first := runJob(t, job, Options{})

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
	rep := runJob(t, second, Options{})
	sent := kindsSent(srv, from)
	if sent[llmtest.KindJudgeBatch] == 0 {
		t.Fatal("no judge request was sent with a new judge template")
	}
	if sent[llmtest.KindRollout]+sent[llmtest.KindDistillSRaR] != 0 {
		t.Errorf("a new judge template re-sent other stages: %v", sent)
	}
	if rep.Problems.Done != first.Problems.Done {
		t.Errorf("done %d, first run %d", rep.Problems.Done, first.Problems.Done)
	}
}

// TestRaisingNReusesRollouts: with one request per sample, raising n from 4
// to 8 sends only the 4 new samples of each problem.
func TestRaisingNReusesRollouts(t *testing.T) {
	f := newFixture(t, 10, llmtest.Config{KeepLog: true})
	dir, rows, job := f.dir, f.rows, f.job
	srv := f.srv
	job.Selection = Selection{}
	runJob(t, job, Options{})

	more := job
	more.Out = filepath.Join(dir, "run8")
	more.Rollout.N = 8
	more.Cache = filepath.Join(job.Out, "cache.db")
	from := len(srv.Log())
	runJob(t, more, Options{})
	if got := kindsSent(srv, from)[llmtest.KindRollout]; got != 4*len(rows) {
		t.Errorf("raising n from 4 to 8 sent %d rollout requests, want %d (only the new samples)", got, 4*len(rows))
	}
}

// TestParquetInput reads problems from a Parquet file with its own column names.
func TestParquetInput(t *testing.T) {
	type row struct {
		Question string  `parquet:"question"`
		Gold     string  `parquet:"gold"`
		Key      *string `parquet:"key,optional"`
		Ref      *string `parquet:"ref,optional"`
	}
	dir := t.TempDir()
	rows := makeProblems(12)
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
	_, url := startSim(t, llmtest.Config{Answers: answersOf(rows)})
	job := testJob(input, filepath.Join(dir, "run"), url)
	job.Input.Fields = Fields{Problem: "question", Answer: "gold", ID: "key", Reference: "ref"}
	rep := runJob(t, job, Options{})
	if rep.Problems.BadLines != 1 || len(rep.BadLines) != 1 || rep.BadLines[0].Line != 13 {
		t.Errorf("bad rows: %d %+v, want row 13", rep.Problems.BadLines, rep.BadLines)
	}
	checkAccounted(t, job.Out, rows, rep)

	job.Input.Fields.Problem = "prompt"
	if _, err := Run(t.Context(), job, Options{Force: true}); err == nil || !strings.Contains(err.Error(), `no column "prompt"`) {
		t.Errorf("a missing column: %v", err)
	}
}
