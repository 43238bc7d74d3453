package pipeline

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
)

// TestJudgeKeyCoversWhatDecidesAVerdict: a run that shares a first run's
// cache asks a judging stage again exactly when something that decides its
// verdicts changed: its model, its endpoint's kind, its template (even
// where the rendered text is the same), each of its sampling settings, its
// seed, or the rubric text it judges; a change of server within one kind,
// or no change at all, asks nothing again, and no change asks any other
// stage again.
func TestJudgeKeyCoversWhatDecidesAVerdict(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, sim.Config{KeepLog: true})
	base := f.job
	base.Empirical.Enabled = true
	base.Prices["judge-2"] = job.Price{Prompt: 1, Completion: 2}
	first := runJob(t, base, Options{HTTPClient: runtest.InProcess})
	recs := runtest.ReadCorpus(t, base.Out)
	if first.Problems.Done == 0 || len(recs) == 0 {
		t.Fatalf("the first run made no record: %+v", first.Problems)
	}
	for _, r := range recs {
		if p := r.Provenance; p.JudgeSeed == nil || *p.JudgeSeed != 0 || p.EmpiricalSeed == nil || *p.EmpiricalSeed != 0 {
			t.Fatalf("provenance seeds %v %v, want the default 0 for both", p.JudgeSeed, p.EmpiricalSeed)
		}
		break
	}
	judgeTemplate := templateWith(t, f.dir, "judge_batch.tmpl", "", "{{/* a comment: the rendered text is the same */}}")
	distillTemplate := templateWith(t, f.dir, "distill_srar.tmpl", "", "Write each item as one short sentence.\n")
	half, nine := 0.5, 0.9
	judged := []sim.Kind{sim.KindJudgeBatch}
	satisfied := []sim.Kind{sim.KindSatisfy}
	cases := []struct {
		name   string
		change func(j *job.Job)
		asked  []sim.Kind // the kinds asked again; every other kind is not
	}{
		{"nothing", func(j *job.Job) {}, nil},
		{"another server of the same kind", func(j *job.Job) { j.Judge.BaseURL = strings.Replace(f.url, "127.0.0.1", "localhost", 1) }, nil},
		{"judge model", func(j *job.Job) { j.Judge.Model = "judge-2" }, judged},
		{"judge endpoint kind", func(j *job.Job) { j.Judge.Kind = "vllm" }, judged},
		{"judge template", func(j *job.Job) { j.PromptsDir = judgeTemplate }, judged},
		{"judge temperature", func(j *job.Job) { j.Judge.Temperature = &half }, judged},
		{"judge top_p", func(j *job.Job) { j.Judge.TopP = &nine }, judged},
		{"judge max_tokens", func(j *job.Job) { j.Judge.MaxTokens = 3000 }, judged},
		{"judge seed", func(j *job.Job) { j.Judge.Seed = 7 }, judged},
		{"judge no_seed", func(j *job.Job) { j.Judge.NoSeed = true }, judged},
		{"empirical seed", func(j *job.Job) { j.Empirical.Seed = 7 }, satisfied},
		{"empirical endpoint kind", func(j *job.Job) { j.Empirical.Kind = "sglang" }, satisfied},
		{"empirical temperature", func(j *job.Job) { j.Empirical.Temperature = &half }, satisfied},
		{"rubric text", func(j *job.Job) { j.PromptsDir = distillTemplate },
			[]sim.Kind{sim.KindDistillSRaR, sim.KindJudgeBatch, sim.KindSatisfy}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			second := base
			second.Out = filepath.Join(f.dir, "again", string(rune('a'+i)))
			second.Cache = filepath.Join(base.Out, "cache.db")
			tc.change(&second)
			from := len(f.srv.Log())
			rep := runJob(t, second, Options{HTTPClient: runtest.InProcess})
			if rep.Problems.Done != first.Problems.Done {
				t.Errorf("done %d, first run %d", rep.Problems.Done, first.Problems.Done)
			}
			checkAskedOnly(t, kindsSent(f.srv, from), tc.asked)
		})
	}
}

// templateWith writes a prompts directory under dir holding the embedded
// template name with prefix before it and suffix after it.
func templateWith(t *testing.T, dir, name, prefix, suffix string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "prompts", "templates", name))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "prompts-"+strings.TrimSuffix(name, ".tmpl"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	runtest.WriteFile(t, filepath.Join(out, name), prefix+string(b)+suffix)
	return out
}

// TestGroundedJudgeKeyCoversWhatDecidesAVerdict: the grounded style's
// validity judge and scorer are keyed as the math judges: a run sharing a
// first run's cache asks the one whose endpoint kind, seed or template
// changed, and nothing else; the records' provenance has the seeds.
func TestGroundedJudgeKeyCoversWhatDecidesAVerdict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, docs, 2)
	srv, url := runtest.StartSim(t, sim.Config{KeepLog: true})
	base := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	base.Judge.Seed = 5
	runJob(t, base, Options{HTTPClient: runtest.InProcess})
	recs := runtest.ReadCorpus(t, base.Out)
	if len(recs) == 0 {
		t.Fatal("the first run made no record")
	}
	for _, r := range recs {
		if p := r.Provenance; p.JudgeSeed == nil || *p.JudgeSeed != 5 || p.EmpiricalSeed == nil || *p.EmpiricalSeed != 0 {
			t.Fatalf("provenance seeds %v %v, want 5 and 0", p.JudgeSeed, p.EmpiricalSeed)
		}
		break
	}
	scoreTemplate := templateWith(t, dir, "score_grounded.tmpl", "", "{{/* the rendered text is the same */}}")
	cases := []struct {
		name   string
		change func(j *job.Job)
		asked  []sim.Kind
	}{
		{"nothing", func(j *job.Job) {}, nil},
		{"judge endpoint kind", func(j *job.Job) { j.Judge.Kind = "vllm" }, []sim.Kind{sim.KindGroundedJudgeBatch}},
		{"judge seed", func(j *job.Job) { j.Judge.Seed = 6 }, []sim.Kind{sim.KindGroundedJudgeBatch}},
		{"empirical no_seed", func(j *job.Job) { j.Empirical.NoSeed = true }, []sim.Kind{sim.KindScoreGrounded}},
		{"scorer template", func(j *job.Job) { j.PromptsDir = scoreTemplate }, []sim.Kind{sim.KindScoreGrounded}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			second := base
			second.Out = filepath.Join(dir, "again", string(rune('a'+i)))
			second.Cache = filepath.Join(base.Out, "cache.db")
			tc.change(&second)
			from := len(srv.Log())
			runJob(t, second, Options{HTTPClient: runtest.InProcess})
			checkAskedOnly(t, kindsSent(srv, from), tc.asked)
		})
	}
}

// checkAskedOnly: requests of every kind in asked were sent, and of no
// other kind.
func checkAskedOnly(t *testing.T, sent map[sim.Kind]int, asked []sim.Kind) {
	t.Helper()
	for _, k := range asked {
		if sent[k] == 0 {
			t.Errorf("no %s request was sent: %v", k, sent)
		}
	}
	for k, n := range sent {
		if !slices.Contains(asked, k) {
			t.Errorf("%d %s requests were sent again; only %v should be: %v", n, k, asked, sent)
		}
	}
}
