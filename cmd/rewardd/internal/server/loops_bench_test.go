package server

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkScoreGroupProposals is POST /v1/score_group with 8 responses and
// 3 RLCER proposals (7 criteria each) judged by the simulated judge (no
// latency), a live rubric recording every group (fsynced) and guide on:
// every iteration sends new responses, so every one is judged. It reports
// the judge requests per group (the target: one per response) and the 50th
// and 99th percentile of the request's time.
func BenchmarkScoreGroupProposals(b *testing.B) {
	lab := rewardtest.DemoLabel()
	lab.Rubric = rewardtest.BenchRubric()
	h := newHarness(b, []schema.Label{lab}, withLive(b, b.TempDir(), "bench", livestate.DefaultSettings()))
	rng := rand.New(rand.NewPCG(4, 2))
	proposals := make([]string, 3)
	for k := range proposals {
		var criteria []string
		for c := range 7 {
			pts := 1 + rng.IntN(5)
			if c%3 == 2 {
				pts = -pts
			}
			criteria = append(criteria, fmt.Sprintf("%d:criterion %d of proposal %d about the sum", pts, c, k))
		}
		proposals[k] = rubricatorJSON(-20, criteria...)
	}
	var times []time.Duration
	sent, groups := h.simulator.Count(), 0
	for b.Loop() {
		responses := make([]string, 8)
		for i := range responses {
			responses[i] = fmt.Sprintf("Attempt %d.\n", groups) + rewardtest.BenchResponse(rng, 3+rng.IntN(4), []string{"5", "7"}[i%2])
		}
		body := mustJSON(b, map[string]any{"problem_id": lab.ID, "scheme": "rlcer", "responses": responses, "proposals": proposals, "guide": true,
			"off_policy": make([]bool, len(responses))})
		start := time.Now()
		req := httptest.NewRequest(http.MethodPost, "/v1/score_group", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, req)
		times = append(times, time.Since(start))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"rubricator"`) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		groups++
	}
	slices.Sort(times)
	b.ReportMetric(float64(h.simulator.Count()-sent)/float64(groups), "judge-requests/group")
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}
