package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestJudgeKeyCoversWhatDecidesAVerdict: a judge made anew over the
// response cache of a first one (a restarted rewardd) asks the endpoint
// again exactly when something that decides the verdict changed: the judge
// model, the endpoint kind, the template (even where the rendered text is
// the same), each sampling setting, the seed, or the rubric text; the same
// judge through another server of its kind is answered from the cache. The
// math and the grounded judge alike.
func TestJudgeKeyCoversWhatDecidesAVerdict(t *testing.T) {
	simulator := sim.New(sim.Config{})
	responses, err := cache.Open(filepath.Join(t.TempDir(), "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { responses.Close() })
	edited := t.TempDir()
	for _, name := range []string{"satisfy.tmpl", "score_grounded.tmpl"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "prompts", "templates", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(edited, name), append(b, "{{/* same text, another template */}}"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seven, zero, half := int64(7), int64(0), 0.5
	type setup struct {
		opt        Options
		baseURL    string
		promptsDir string
		rubric     func([]schema.Item) []schema.Item
	}
	base := setup{opt: Options{Model: "simulated", Seed: &zero}, baseURL: "http://simulated.invalid/v1"}
	otherText := func(items []schema.Item) []schema.Item {
		items = append([]schema.Item(nil), items...)
		items[1].Text += " Show the work."
		return items
	}
	cases := []struct {
		name   string
		change func(*setup)
		asked  bool
	}{
		{"nothing", func(*setup) {}, false},
		{"another server of the same kind", func(s *setup) { s.baseURL = "http://other.invalid/v1" }, false},
		{"judge model", func(s *setup) { s.opt.Model = "judge-2" }, true},
		{"endpoint kind", func(s *setup) { s.opt.EndpointKind = "vllm" }, true},
		{"template", func(s *setup) { s.promptsDir = edited }, true},
		{"max tokens", func(s *setup) { s.opt.MaxTokens = 3000 }, true},
		{"temperature", func(s *setup) { s.opt.Temperature = &half }, true},
		{"top_p", func(s *setup) { s.opt.TopP = &half }, true},
		{"seed", func(s *setup) { s.opt.Seed = &seven }, true},
		{"no seed", func(s *setup) { s.opt.Seed = nil }, true},
		{"rubric text", func(s *setup) { s.rubric = otherText }, true},
	}
	ask := func(t *testing.T, s setup) {
		t.Helper()
		client, err := llm.NewClient(llm.Endpoint{BaseURL: s.baseURL},
			llm.Options{HTTPClient: &http.Client{Transport: simulator.Transport()}, MaxAttempts: 2, BackoffBase: time.Millisecond}, responses, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		ps, err := prompts.Load(s.promptsDir)
		if err != nil {
			t.Fatal(err)
		}
		j, err := New(client, ps, s.opt)
		if err != nil {
			t.Fatal(err)
		}
		lab := rewardtest.DemoLabel()
		if s.rubric != nil {
			lab.Rubric = s.rubric(lab.Rubric)
		}
		r := reward.Analyze(rewardtest.TwoSteps, lab.GroundTruth)
		if _, err := j.Verdicts(context.Background(), lab.Question, lab.Rubric, &r); err != nil {
			t.Fatalf("verdicts: %v", err)
		}
		glab := rewardtest.GroundedLabels(t)[0]
		if s.rubric != nil {
			glab.Grounded.Criteria = append([]schema.Criterion(nil), glab.Grounded.Criteria...)
			glab.Grounded.Criteria[0].Description += " Name it."
		}
		if _, err := j.GroundedScores(context.Background(), &glab, rewardtest.Scored3); err != nil {
			t.Fatalf("grounded scores: %v", err)
		}
	}
	ask(t, base)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.change(&s)
			before := simulator.Count()
			ask(t, s)
			switch sent := simulator.Count() - before; {
			case tc.asked && sent != 2:
				t.Errorf("%d requests reached the endpoint; want the satisfaction and the grounded judge asked again", sent)
			case !tc.asked && sent != 0:
				t.Errorf("%d requests reached the endpoint; want both verdicts from the cache", sent)
			}
		})
	}
}

// TestSeedIsSent: the judge's seed goes out with its requests, and no seed
// goes out without one.
func TestSeedIsSent(t *testing.T) {
	simulator := sim.New(sim.Config{})
	seven := int64(7)
	for _, seed := range []*int64{&seven, nil} {
		var sent []bool
		tap := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			b, err := readBody(r)
			if err != nil {
				return nil, err
			}
			sent = append(sent, containsSeed(b, seed))
			return simulator.Transport().RoundTrip(r)
		})
		j := newTestJudge(t, tap, 1, nil, Options{Model: "simulated", Seed: seed})
		lab := rewardtest.DemoLabel()
		r := reward.Analyze(rewardtest.TwoSteps, lab.GroundTruth)
		if _, err := j.Verdicts(context.Background(), lab.Question, lab.Rubric, &r); err != nil {
			t.Fatal(err)
		}
		if len(sent) != 1 || !sent[0] {
			t.Errorf("seed %v: the request's seed field was not as set (%v)", seed, sent)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// readBody reads r's body and puts it back for the next reader.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// containsSeed reports whether the request body's seed field is seed
// (absent for nil).
func containsSeed(body []byte, seed *int64) bool {
	var req struct {
		Seed *int64 `json:"seed"`
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	if seed == nil || req.Seed == nil {
		return seed == nil && req.Seed == nil
	}
	return *seed == *req.Seed
}
