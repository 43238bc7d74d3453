package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestEmpiricalStepIsThePosition: the empirical stage stores the step a
// verdict is tied to as the step's position in the rollout, the numbering
// rewardd's step spans use, even when the policy numbers every step
// "### Step 1:" (starting over at each one). The simulated judge names the
// step as a model reading the satisfy prompt would.
func TestEmpiricalStepIsThePosition(t *testing.T) {
	t.Parallel()
	f, tap, opt := inProcessFixture(t, 6, sim.Config{})
	job := f.job
	job.Rollout.N = 4
	job.Empirical.Enabled = true
	header := regexp.MustCompile(`(?m)^### Step \d+:`)
	tap.handle = func(r *http.Request, kind sim.Kind, _ []sim.Message) (*http.Response, error) {
		if kind != sim.KindRollout {
			return nil, nil
		}
		resp, err := tap.next.RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var reply map[string]any
		if err := json.Unmarshal(body, &reply); err != nil {
			return nil, err
		}
		for _, c := range reply["choices"].([]any) {
			msg := c.(map[string]any)["message"].(map[string]any)
			text := header.ReplaceAllString(msg["content"].(string), "### Step 1:")
			if i := strings.LastIndex(text, "<answer>"); i >= 0 {
				text = text[:i] + sim.SatisfiedMarker(1) + "\n" + text[i:]
			}
			msg["content"] = text
		}
		body, _ = json.Marshal(reply)
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp.Header.Del("Content-Length")
		return resp, nil
	}
	if _, err := Run(context.Background(), job, opt); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for id, rec := range runtest.ReadCorpus(t, job.Out) {
		for _, ro := range rec.Rollouts {
			k := countSteps(ro.Text)
			if len(ro.Satisfaction) == 0 || k < 2 || !strings.Contains(ro.Text, sim.SatisfiedMarker(1)) {
				continue
			}
			checked++
			if v := ro.Satisfaction[0]; !v.Satisfied || int(v.Step) != k {
				t.Errorf("record %s rollout %d: item 1 %+v; want satisfied at step %d, the last of its %d steps (all written \"### Step 1:\")", id, ro.Index, v, k, k)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no judged rollout with two or more steps to check")
	}
	t.Logf("%d rollouts checked", checked)
}
