package llm

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestBatchRowsPricedFromTheBestEstimate: with a cost budget, a batch's
// rows are priced from distill plan's figures when there are some, else
// from a pilot of the stage's first requests sent online (said in the
// log), never from their max_tokens; without a budget nothing goes online.
func TestBatchRowsPricedFromTheBestEstimate(t *testing.T) {
	const asked, maxTokens = 30, 4000
	cases := []struct {
		name       string
		budget     float64
		plan       map[string]float64
		wantOnline int
		wantFrom   string
	}{
		{"plan", 100, map[string]float64{"rollout": 50}, 0, "plan.json"},
		{"pilot", 100, nil, 8, "online pilot"},
		{"no budget", 0, nil, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, url, stop, err := sim.Start(sim.Config{BatchTurnaround: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			var log logBuffer
			meter := NewMeter(map[string]Price{"simulated": {PromptPerMTok: 1, CompletionPerMTok: 2}}, Budget{MaxCostUSD: tc.budget})
			cache := openTestCache(t)
			b, err := NewBatcher(BatchOptions{Dir: t.TempDir(), PollInterval: time.Hour, PlanCompletion: tc.plan, Logger: log.logger()}, cache, meter)
			if err != nil {
				t.Fatal(err)
			}
			api, err := NewBatchAPI(Endpoint{BaseURL: url}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(Endpoint{BaseURL: url}, Options{Defer: b.Deferrer(api)}, cache, meter)
			if err != nil {
				t.Fatal(err)
			}
			b.Start(context.Background())
			defer b.Close()
			online := 0
			for i := range asked {
				req := rolloutRequest()
				req.Messages[0].Content = strings.Replace(req.Messages[0].Content, "2+2", fmt.Sprintf("%d+2", i), 1)
				req.MaxTokens = maxTokens
				_, err := c.Chat(context.Background(), req)
				switch ClassOf(err) {
				case ClassDeferred:
				case 0:
					online++
				default:
					t.Fatalf("request %d: %v", i, err)
				}
			}
			if online != tc.wantOnline || srv.Count() != int64(tc.wantOnline) {
				t.Errorf("%d requests answered online (%d at the endpoint), want %d", online, srv.Count(), tc.wantOnline)
			}
			if err := b.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := b.States()
			if len(st) != 1 || st[0].Rows != asked-tc.wantOnline {
				t.Fatalf("batches %+v, want one of %d rows", st, asked-tc.wantOnline)
			}
			ceiling := meter.BatchCost("simulated", st[0].PromptTokens["rollout"], int64(maxTokens*st[0].Rows))
			if tc.budget == 0 {
				return
			}
			if st[0].EstCostUSD >= ceiling/4 {
				t.Errorf("the batch is priced at $%.6f, its max_tokens at $%.6f: not from its answers' length", st[0].EstCostUSD, ceiling)
			}
			if tc.plan != nil {
				want := meter.BatchCost("simulated", st[0].PromptTokens["rollout"], int64(math.Ceil(tc.plan["rollout"]*float64(st[0].Rows))))
				if math.Abs(st[0].EstCostUSD-want) > 1e-12 {
					t.Errorf("priced at $%.8f, want $%.8f from the plan's %v tokens a request", st[0].EstCostUSD, want, tc.plan["rollout"])
				}
			}
			if !strings.Contains(log.String(), tc.wantFrom) {
				t.Errorf("the log does not say the rows are priced from %q:\n%s", tc.wantFrom, log.String())
			}
		})
	}
}
