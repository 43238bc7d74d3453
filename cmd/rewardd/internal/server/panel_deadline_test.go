package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// TestPanelMemberDeadlineRunsFromAnAnswer: the member deadline runs from
// another member's answer, not from its failure. A member that fails at
// once (down, or its breaker open) must not start the clock on the ones
// still judging: here the truth judge answers twenty member deadlines
// after the down judge failed, and its verdict decides (judge_ok true),
// never cut off.
func TestPanelMemberDeadlineRunsFromAnAnswer(t *testing.T) {
	t.Parallel()
	const deadline = 10 * time.Millisecond
	failed := make(chan struct{}) // closed when the down judge's call has failed
	var once sync.Once
	down := roundTripFunc(func(*http.Request) (*http.Response, error) {
		once.Do(func() { close(failed) })
		return nil, errors.New("connection refused (test)")
	})
	cut := make(chan error, 1)
	slow := func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-failed
			select {
			case <-r.Context().Done():
				cut <- context.Cause(r.Context())
				return nil, r.Context().Err()
			case <-time.After(20 * deadline):
				return next.RoundTrip(r)
			}
		})
	}
	h := newPanelHarnessOf(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config) {
		c.Timeout, c.PanelMemberDeadline = 10*time.Second, deadline
	}, panelMember{model: "truth", wrap: slow}, panelMember{model: "down", wrap: func(http.RoundTripper) http.RoundTripper { return down }})
	var got scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}}), &got)
	select {
	case cause := <-cut:
		if errors.Is(cause, judge.ErrMemberLate) {
			t.Errorf("the truth judge was cut off by the member deadline, which the down judge's failure started: %v", cause)
		} else {
			t.Errorf("the truth judge's call ended: %v", cause)
		}
	default:
	}
	if !got.Results[0].JudgeOK {
		t.Errorf("judge_ok false (%s); the truth judge answered", got.Results[0].JudgeError)
	}
}

// roundTripFunc is a function that is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
