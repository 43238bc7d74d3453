package pipeline

import (
	"github.com/rubricforge/rubricforge/corpus"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// groundedTapFixture is a grounded job over a few documents whose endpoint
// is the simulated one in this process behind a tapTransport.
func groundedTapFixture(t *testing.T, docs int, handle func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error)) (job.Job, Options, *sim.Server) {
	t.Helper()
	dir := t.TempDir()
	runtest.WriteDocs(t, filepath.Join(dir, "docs"), docs)
	srv := sim.New(sim.Config{})
	t.Cleanup(srv.Close)
	tap := &tapTransport{next: srv.Transport(), handle: handle}
	j := runtest.GroundedTestJob(filepath.Join(dir, "docs"), filepath.Join(dir, "run"), "http://sim.invalid/v1")
	return j, Options{HTTPClient: &http.Client{Transport: tap}}, srv
}

// TestGroundedEmpiricalThatJudgedNothing: a reward judge whose every reply
// is unusable leaves every closed-book answer unscored. That is a failure
// of the empirical stage, named in the report and the summary, and its
// criteria are unmeasured, not "not varying".
func TestGroundedEmpiricalThatJudgedNothing(t *testing.T) {
	t.Parallel()
	j, opt, _ := groundedTapFixture(t, 4, func(r *http.Request, kind sim.Kind, _ []sim.Message) (*http.Response, error) {
		if kind == sim.KindScoreGrounded {
			return chatReply(r, "I would rather not score this answer."), nil
		}
		return nil, nil
	})
	rep := runJob(t, j, opt)
	if rep.Grounded == nil || rep.Grounded.ScoredAnswers != 0 || rep.Grounded.UnscoredAnswers == 0 {
		t.Fatalf("grounded figures %+v; want every answer unscored", rep.Grounded)
	}
	if len(rep.StageFailures) != 1 || rep.StageFailures[0].Stage != job.StageEmpirical {
		t.Errorf("stage failures %+v; want the empirical stage", rep.StageFailures)
	}
	if !rep.SomethingFailed() {
		t.Error("a run whose empirical stage judged nothing does not count as having failures (exit 3)")
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	if p := summaryDisagreements(sum.String()); len(p) > 0 {
		t.Errorf("the summary contradicts itself: %v\n%s", p, sum.String())
	}
	s := sum.String()
	for _, want := range []string{"stage failed: empirical", "unmeasured"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary does not say %q:\n%s", want, s)
		}
	}
	t.Log(s)
	if strings.Contains(s, "not varying 0") || strings.Contains(s, "no training signal") {
		t.Errorf("summary calls unmeasured criteria not varying:\n%s", s)
	}
}

// refusesJSONObject answers a request that asks for response_format
// json_object with the 400 a server that does not take it sends.
func refusesJSONObject(asked *atomic.Int64) func(r *http.Request, kind sim.Kind, _ []sim.Message) (*http.Response, error) {
	return func(r *http.Request, _ sim.Kind, _ []sim.Message) (*http.Response, error) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"response_format"`)) {
			return nil, nil
		}
		asked.Add(1)
		msg := `{"error": {"message": "response_format json_object is not supported by this model", "type": "invalid_request_error"}}`
		return &http.Response{
			StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(msg)),
			ContentLength: int64(len(msg)), Request: r,
		}, nil
	}
}

// TestGroundedJSONObjectPerStage: against a server that refuses
// response_format, the default run fails every passage at analyze and the
// summary names the cause; with json_object off for the stages, the same
// server makes records and is never asked for it.
func TestGroundedJSONObjectPerStage(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	j, opt, _ := groundedTapFixture(t, 3, refusesJSONObject(&asked))
	j.Judge.Mode = "item" // the item judge asks for json_object too
	rep := runJob(t, j, opt)
	if rep.Problems.Done != 0 || rep.FailuresByStage[job.StageAnalyze] != rep.Problems.Unique {
		t.Fatalf("done %d, failures %v; want every passage failed at analyze", rep.Problems.Done, rep.FailuresByStage)
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	if p := summaryDisagreements(sum.String()); len(p) > 0 {
		t.Errorf("the summary contradicts itself: %v\n%s", p, sum.String())
	}
	t.Log(sum.String())
	if c := rep.FailureCauses[job.StageAnalyze]; c.Count != rep.Problems.Unique || !strings.Contains(c.Reason, "response_format") ||
		!strings.Contains(sum.String(), "analyze, most common cause") || !strings.Contains(sum.String(), "json_object: {analyze: false, synthesize: false, judge: false}") {
		t.Errorf("cause %+v; summary:\n%s", c, sum.String())
	}

	j2, opt2, _ := groundedTapFixture(t, 3, refusesJSONObject(&asked))
	j2.Judge.Mode = "item"
	j2.JSONObject = job.JSONObjectStages{}
	asked.Store(0)
	rep = runJob(t, j2, opt2)
	if rep.Problems.Failed != 0 || rep.Problems.Done == 0 || asked.Load() != 0 {
		t.Errorf("with json_object off: done %d, failed %d (%v), %d requests asked for response_format", rep.Problems.Done, rep.Problems.Failed, rep.FailureCauses, asked.Load())
	}
}

// TestCauseOf: the same cause on another passage, question or answer is
// one cause; an HTTP status stays readable; a long reason is cut on a
// character boundary.
func TestCauseOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxCauseLength)
	for _, tc := range []struct{ in, want string }{
		{"scores of answer 2 to question 1: no JSON object", "scores of answer N to question N: no JSON object"},
		{"permanent error after 1 attempt: HTTP 400: bad", "permanent error after N attempt: HTTP 400: bad"},
		{"weight 2.5 is below 5", "weight N is below N"},
		{long, long[:maxCauseLength] + " ..."},
	} {
		if got := causeOf(tc.in); got != tc.want {
			t.Errorf("causeOf(%.40q) = %.60q, want %.60q", tc.in, got, tc.want)
		}
	}
	var c causes
	for i := range maxCauses + 10 {
		c.add(job.StageAnalyze, fmt.Sprintf("reason %c%c", 'a'+i%26, 'a'+i/26))
	}
	for range 20 {
		c.add(job.StageAnalyze, "reason aa")
	}
	if top := c.top()[job.StageAnalyze]; top.Reason != "reason aa" || top.Count != 21 || top.Of != maxCauses+30 {
		t.Errorf("top cause %+v", top)
	}
	if n := len(c.byStage[job.StageAnalyze]); n > maxCauses+1 {
		t.Errorf("%d distinct reasons kept, more than %d and the other bucket", n, maxCauses)
	}
}

// weightsSumToOne answers the first synthesize request of each passage
// (not a repair) with the simulated endpoint's tuples, their weights
// rewritten to add up to 1, as a model that was told no scale may write
// them.
func weightsSumToOne(t *testing.T, srv **sim.Server) func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
	return func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
		if kind != sim.KindGroundedSynthesize || len(msgs) > 2 {
			return nil, nil
		}
		resp, err := (*srv).Transport().RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		defer resp.Body.Close()
		var body struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return nil, err
		}
		content := body.Choices[0].Message.Content
		content = content[strings.Index(content, "{") : strings.LastIndex(content, "}")+1]
		var reply map[string][]map[string]any
		if err := json.Unmarshal([]byte(content), &reply); err != nil {
			return chatReply(r, content), nil // a malformed reply stays malformed
		}
		for _, q := range reply["questions"] {
			cs, _ := q["criteria"].([]any)
			for _, c := range cs {
				c.(map[string]any)["weight"] = 1 / float64(len(cs))
			}
		}
		b, err := json.Marshal(reply)
		if err != nil {
			t.Error(err)
		}
		return chatReply(r, string(b)), nil
	}
}

// TestGroundedWeightsBelowTheMinimumAreRepaired: tuples whose weights add
// up to 1 fail the minimum total weight; they go back to the model for
// repair, as an unparseable reply does, instead of leaving every passage
// out after three stages were paid for.
func TestGroundedWeightsBelowTheMinimumAreRepaired(t *testing.T) {
	t.Parallel()
	var srv *sim.Server
	j, opt, s := groundedTapFixture(t, 4, weightsSumToOne(t, &srv))
	srv = s
	j.Empirical.Enabled = false
	rep := runJob(t, j, opt)
	if rep.Problems.LeftOut != 0 || rep.Problems.Done != rep.Problems.Unique {
		fails := runtest.ReadFailures(t, j.Out)
		for _, f := range fails {
			t.Log(f.Stage, f.Reason)
			break
		}
		t.Errorf("done %d of %d, left out %d, failed %d; want every passage made after a repair", rep.Problems.Done, rep.Problems.Unique, rep.Problems.LeftOut, rep.Problems.Failed)
	}
	if rep.Repairs[job.StageSynthesize] < rep.Problems.Unique {
		t.Errorf("%d synthesize repairs for %d passages", rep.Repairs[job.StageSynthesize], rep.Problems.Unique)
	}
}

// TestBrokenTemplateOverrideIsRefusedBeforePaying: a template override
// that names a field its stage does not give is refused before the first
// request, for every style, with the file named; nothing is sent.
func TestBrokenTemplateOverrideIsRefusedBeforePaying(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		style, template string
	}{
		{schema.StyleGrounded, prompts.GroundedAnalyze},
		{schema.StyleGrounded, prompts.ScoreGrounded},
		{schema.StyleSRaR, prompts.Rollout},
		{schema.StyleSRaR, prompts.Satisfy},
		{schema.StyleFactualProcess, prompts.DistillFactualProcess},
	} {
		t.Run(tc.style+"/"+tc.template, func(t *testing.T) {
			var sent atomic.Int64
			count := func(*http.Request, sim.Kind, []sim.Message) (*http.Response, error) {
				sent.Add(1)
				return nil, nil
			}
			var j job.Job
			var opt Options
			if tc.style == schema.StyleGrounded {
				j, opt, _ = groundedTapFixture(t, 2, count)
			} else {
				f, tap, o := inProcessFixture(t, 3, sim.Config{})
				tap.handle, j, opt = count, f.job, o
				j.Style, j.Judge.Enabled, j.Empirical.Enabled = tc.style, true, true
			}
			dir := t.TempDir()
			path := filepath.Join(dir, tc.template+".tmpl")
			runtest.WriteFile(t, path, "=== user ===\n{{.NoSuchField}}\n")
			j.PromptsDir = dir
			_, err := Run(context.Background(), j, opt)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("a run with a broken %s: %v; want an error naming %s", tc.template, err, path)
			}
			if n := sent.Load(); n != 0 {
				t.Errorf("%d requests sent before the broken template was found", n)
			}
		})
	}
}

// TestGroundedProvenanceCarriesTheGroundedTemplates: a grounded record's
// provenance names the hashes of the grounded templates the run used (its
// overrides), not the math templates'.
func TestGroundedProvenanceCarriesTheGroundedTemplates(t *testing.T) {
	t.Parallel()
	j, opt, _ := groundedTapFixture(t, 2, nil)
	dir := t.TempDir()
	for _, name := range []string{prompts.GroundedSynthesize, prompts.GroundedJudgeBatch, prompts.GroundedAnswer, prompts.ScoreGrounded} {
		text, err := os.ReadFile(filepath.Join("..", "prompts", "templates", name+".tmpl"))
		if err != nil {
			t.Fatal(err)
		}
		runtest.WriteFile(t, filepath.Join(dir, name+".tmpl"), "{{/* an override */}}\n"+string(text))
	}
	j.PromptsDir = dir
	rep := runJob(t, j, opt)
	ps, err := prompts.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs := runtest.ReadCorpus(t, j.Out)
	if len(recs) == 0 {
		t.Fatalf("no records (%+v)", rep.Problems)
	}
	for id, r := range recs {
		p := r.Provenance
		got := []string{p.DistillTemplate, deref(p.JudgeTemplate), p.RolloutTemplate, deref(p.SatisfyTemplate)}
		want := []string{ps.Hash(prompts.GroundedSynthesize), ps.Hash(prompts.GroundedJudgeBatch), ps.Hash(prompts.GroundedAnswer), ps.Hash(prompts.ScoreGrounded)}
		if !slices.Equal(got, want) {
			t.Errorf("record %s provenance templates %v, want the overrides' %v", id, got, want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestRequestsAreWhatWasSent: a request counts where it was sent to the
// endpoint (llm.StageStats.Requests); an answer read from the cache is
// counted beside it, never as a request: in a record's usage, and in
// distill status against the plan, where a resumed run's cache reads (the
// answers its killed session had already paid for) made it look 14% over.
func TestRequestsAreWhatWasSent(t *testing.T) {
	t.Parallel()
	var u usage
	u.enter(job.StageAnalyze)
	u.add(&llm.Response{PromptTokens: 100, CompletionTokens: 20, CostUSD: 0.01})
	u.add(&llm.Response{PromptTokens: 100, CompletionTokens: 20, Cached: true})
	if want := (schema.Usage{Requests: 1, CachedRequests: 1, PromptTokens: 100, CompletionTokens: 20, CostUSD: 0.01}); u.u != want {
		t.Errorf("a record's usage after one sent and one cached answer: %+v, want %+v", u.u, want)
	}
	if got := u.byStage[job.StageAnalyze].Requests; got != 2 {
		t.Errorf("the pilot's requests by stage (what a fresh run asks) count %d, want 2", got)
	}

	st := Status{
		Plan: &corpus.PlanDoc{Input: corpus.PlanInput{Unique: 100}, Total: corpus.StageProjection{Requests: corpus.PlanRange{Value: 1000}}, Tokens: corpus.PlanRange{Value: 1e6}, Records: corpus.PlanRange{Value: 100}},
		Report: &Report{Status: StatusFinished, Problems: ProblemCounts{Unique: 100, Done: 100},
			LLM: llm.Snapshot{Total: llm.StageStats{Requests: 1000, CacheHits: 140}}},
	}
	var b strings.Builder
	st.writePlan(&b)
	if !strings.Contains(b.String(), "requests sent 1,000 vs 1,000 planned (140 read from the cache)") {
		t.Errorf("status against the plan:\n%s", b.String())
	}
}
