package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// TestStatusLineShowsRequestsOut: the status line counts the requests out
// at the endpoints and the age of the oldest, and warns, naming the flag
// that bounds it, when one runs far past the others of its stage or none
// of its stage has come back for minutes (issue 43, item 7: "0/5 done"
// for 9 minutes, then a timeout).
func TestStatusLineShowsRequestsOut(t *testing.T) {
	t.Parallel()
	j := runtest.GroundedTestJob("docs", "run", "http://e/v1")
	j.Style = schema.StyleGrounded
	j.Distill.MaxTokens = 8192
	eps := []EndpointHealth{
		{BaseURL: "http://e/v1", Stages: []string{"analyze", "synthesize", "enrich"}, Health: llm.Health{Sending: 4, Oldest: 9 * time.Minute, OldestStage: "synthesize", OldestTypical: 12 * time.Second}},
		{BaseURL: "http://j/v1", Stages: []string{"judge"}, Health: llm.Health{Sending: 1, Oldest: 3 * time.Second, OldestStage: "judge"}},
	}
	s := statusLine{total: 5}
	s.requestsOut(&j, eps)
	line := s.String()
	if !strings.Contains(line, "5 requests out, the oldest 9m0s (synthesize)") {
		t.Errorf("status line %q does not count the requests out and the oldest", line)
	}
	if !strings.Contains(line, "warning: a synthesize request has run 9m0s, far past the others (12s)") || !strings.Contains(line, "--distill-max-tokens (distill.max_tokens 8192)") {
		t.Errorf("status line %q does not warn with the flag", line)
	}
	none := []EndpointHealth{{BaseURL: "http://e/v1", Health: llm.Health{Sending: 5, Oldest: 3 * time.Minute, OldestStage: "judge"}}}
	s = statusLine{}
	j.Judge.MaxTokens = 0
	s.requestsOut(&j, none)
	if line := s.String(); !strings.Contains(line, "no judge request has come back") || !strings.Contains(line, "--judge-max-tokens (judge.max_tokens: none, the server's limit)") {
		t.Errorf("status line %q does not warn that nothing came back", line)
	}
	s = statusLine{}
	s.requestsOut(&j, []EndpointHealth{{Health: llm.Health{Sending: 3, Oldest: 20 * time.Second, OldestStage: "synthesize", OldestTypical: 15 * time.Second}}})
	if line := s.String(); strings.Contains(line, "warning") {
		t.Errorf("a request within its stage's usual time is warned of: %q", line)
	}
}

// TestFaultsAreNotHeldBack: an endpoint answered with a few 429s and
// timeouts at its full concurrency is not "held back" (issue 43, item 10:
// the simulated endpoint's injected faults were shown so); one whose
// concurrency was lowered is.
func TestFaultsAreNotHeldBack(t *testing.T) {
	t.Parallel()
	faults := EndpointHealth{BaseURL: "http://e/v1", Stages: []string{"judge"}, Health: llm.Health{InFlight: 2, InFlightLimit: 64, MaxInFlight: 64, RateLimitedLastMinute: 4, TimeoutsLastMinute: 8}}
	lowered := faults
	lowered.Health.InFlightLimit = 16
	s := statusLine{heldBack: degradedEndpoints([]EndpointHealth{faults, lowered})}
	line := s.String()
	if strings.Count(line, "held back:") != 1 || !strings.Contains(line, "retried: http://e/v1 (judge): last minute: 4 429s, 8 timeouts") {
		t.Errorf("status line:\n%s", line)
	}
}

// TestStatusLineAtLeastEveryMinute: a status line that does not change is
// not repeated every 5 seconds, but is printed again after a minute, so a
// run that waits shows it is alive (issue 43, item 10: docs/distill-run.md
// promised a line every 5 s, and a quiet run printed none).
func TestStatusLineAtLeastEveryMinute(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := newProgress(&b, false, 5*time.Second)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return now }
	s := statusLine{total: 5}
	p.update(s)
	now = now.Add(10 * time.Second)
	p.update(s)
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Errorf("%d lines after an unchanged update 10 s later, want 1", n)
	}
	now = now.Add(55 * time.Second)
	p.update(s)
	if n := strings.Count(b.String(), "\n"); n != 2 {
		t.Errorf("%d lines a minute later, want the line again", n)
	}
}
