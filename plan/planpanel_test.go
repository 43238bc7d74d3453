package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
)

// modelCounter counts the requests to the simulated endpoint by model.
type modelCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	by   map[string]int
}

func (c *modelCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var r struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &r)
	c.mu.Lock()
	c.by[r.Model]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// TestPlanPricesEveryJudgeOfAPanel: the plan of a job with a panel of
// three judges of different prices counts each judge's requests apart,
// prices them at the judge's model, names the judges in its text, and
// comes within 5% of what the whole job then sends and spends.
func TestPlanPricesEveryJudgeOfAPanel(t *testing.T) {
	t.Parallel()
	rows := planProblems(60)
	dir := t.TempDir()
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	srv := sim.New(sim.Config{Answers: runtest.AnswersOf(rows), Seed: 7, Judges: map[string]sim.JudgeProfile{"j-flaky": {Fail: 0.2}}})
	t.Cleanup(srv.Close)
	counter := &modelCounter{next: srv.Transport(), by: map[string]int{}}
	opt := pipeline.Options{HTTPClient: &http.Client{Transport: counter}}
	jb := runtest.TestJob(input, filepath.Join(dir, "plan"), "http://sim.invalid/v1")
	jb.Empirical.Enabled = true
	jb.Selection = job.Selection{} // every problem makes a record: the projection's spread is the requests', not the selection's
	prices := map[string]job.Price{"j-cheap": {Prompt: 0.1, Completion: 0.2}, "j-flaky": {Prompt: 1, Completion: 2}, "j-dear": {Prompt: 30, Completion: 60}}
	for _, m := range []string{"j-cheap", "j-flaky", "j-dear"} {
		jb.Judge.Panel = append(jb.Judge.Panel, job.PanelJudge{Endpoint: job.Endpoint{Model: m}})
		jb.Prices[m] = prices[m]
	}
	plan, err := Run(context.Background(), jb, opt, Options{Sample: 30})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	WriteText(&text, plan, jb.Out)
	projected := map[string]float64{}
	for _, s := range plan.Stages {
		projected[s.Stage] = s.Requests.Value
	}
	for _, m := range []string{"j-cheap", "j-flaky", "j-dear"} {
		if !strings.Contains(text.String(), "judge["+m+"]") {
			t.Errorf("the plan's text does not name judge %s:\n%s", m, text.String())
		}
	}
	if _, ok := projected[job.StageJudge]; ok {
		t.Errorf("the plan counts requests of the judge stage apart from its judges': %v", projected)
	}

	whole := jb
	whole.Out = filepath.Join(dir, "whole")
	counter.by = map[string]int{}
	rep, err := pipeline.Run(context.Background(), whole, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", text.String())
	for _, m := range []string{"j-cheap", "j-flaky", "j-dear"} {
		got, want := projected["judge["+m+"]"], float64(counter.by[m])
		t.Logf("judge %s: projected %.0f requests, the run sent %.0f", m, got, want)
		if want == 0 || got < 0.95*want || got > 1.05*want {
			t.Errorf("judge %s: projected %.0f requests, the run sent %.0f", m, got, want)
		}
	}
	cost := rep.LLM.Total.CostUSD
	t.Logf("projected cost $%.4f (%.4f..%.4f), the run spent $%.4f", plan.Total.CostUSD.Value, plan.Total.CostUSD.Low, plan.Total.CostUSD.High, cost)
	if got := plan.Total.CostUSD.Value; got < 0.95*cost || got > 1.05*cost {
		t.Errorf("projected cost $%.4f, the run spent $%.4f", got, cost)
	}
	dear := plan.Stages[indexOfStage(plan.Stages, "judge[j-dear]")].CostUSD.Value
	cheap := plan.Stages[indexOfStage(plan.Stages, "judge[j-cheap]")].CostUSD.Value
	if dear < 100*cheap {
		t.Errorf("judge j-dear costs $%.4f, j-cheap $%.4f: not priced at their own models (300 times apart)", dear, cheap)
	}
}

func indexOfStage(stages []corpus.StageProjection, name string) int {
	for i, s := range stages {
		if s.Stage == name {
			return i
		}
	}
	panic("no stage " + name)
}
