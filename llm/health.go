package llm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Health is a snapshot of how a Client copes with its endpoint, for the
// run report and the status line: why a run is slow when it is.
type Health struct {
	InFlight int `json:"in_flight"` // attempts in flight now
	// AdmissionsWaiting counts the units of work waiting in Admit for the
	// client to take more (a pipeline's problems not yet started).
	AdmissionsWaiting int `json:"admissions_waiting"`
	InFlightLimit     int `json:"in_flight_limit"` // the adaptive cap now
	MaxInFlight       int `json:"max_in_flight"`   // Options.MaxInFlight
	// LimitLowered says why the cap was last lowered ("" if never), and
	// LimitLoweredAt when.
	LimitLowered   string    `json:"limit_lowered,omitempty"`
	LimitLoweredAt time.Time `json:"limit_lowered_at,omitzero"`
	// RateLimitedLastMinute counts attempts answered 429 in the last
	// minute; TimeoutsLastMinute attempts cut by their deadline.
	RateLimitedLastMinute int64 `json:"rate_limited_last_minute"`
	TimeoutsLastMinute    int64 `json:"timeouts_last_minute"`
	// Deadlines is the learned per-attempt deadline of each stage that has
	// one; a stage not listed has too few samples yet, and
	// AttemptTimeout applies.
	Deadlines      map[string]time.Duration `json:"deadlines,omitempty"`
	AttemptTimeout time.Duration            `json:"attempt_timeout"`
	// Requests and Tokens are the limits learned from the server's
	// x-ratelimit-* headers; nil until the server has sent them.
	Requests *LearnedLimit `json:"requests_limit,omitempty"`
	Tokens   *LearnedLimit `json:"tokens_limit,omitempty"`
	// Sending counts the attempts sent and not yet answered; Oldest is how
	// long the oldest of them has run, OldestStage its stage, and
	// OldestTypical the median latency of that stage's recent successful
	// attempts (0: none yet).
	Sending       int           `json:"sending"`
	Oldest        time.Duration `json:"oldest,omitempty"`
	OldestStage   string        `json:"oldest_stage,omitempty"`
	OldestTypical time.Duration `json:"oldest_typical,omitempty"`
}

// LearnedLimit is a rate limit as the server announced it.
type LearnedLimit struct {
	PerMinute float64       `json:"per_minute"` // the pace kept, per minute
	Limit     int64         `json:"limit"`      // x-ratelimit-limit-*
	Remaining int64         `json:"remaining"`  // x-ratelimit-remaining-*, as last reported
	Reset     time.Duration `json:"reset"`      // x-ratelimit-reset-*, as last reported
	At        time.Time     `json:"at"`         // when last reported
}

// Health returns a snapshot of the client's pacing and deadlines.
func (c *Client) Health() Health {
	now := time.Now()
	h := Health{MaxInFlight: c.opt.MaxInFlight, AttemptTimeout: c.opt.AttemptTimeout, Deadlines: c.dl.learned()}
	c.ctrl.mu.Lock()
	h.InFlight, h.InFlightLimit = c.ctrl.inflight, c.ctrl.limit
	h.AdmissionsWaiting = len(c.ctrl.demand)
	h.LimitLowered, h.LimitLoweredAt = c.ctrl.lowered, c.ctrl.loweredAt
	h.RateLimitedLastMinute = c.ctrl.rateLimited.lastMinute(now)
	h.TimeoutsLastMinute = c.ctrl.timeouts.lastMinute(now)
	c.ctrl.mu.Unlock()
	h.Sending, h.OldestStage, h.Oldest = c.out.oldest(now)
	if h.Sending > 0 {
		h.OldestTypical = c.dl.typical(h.OldestStage)
	}
	if s, ok := c.ctrl.paced.requests.status(); ok {
		h.Requests = &s
	}
	if s, ok := c.ctrl.paced.tokens.status(); ok {
		h.Tokens = &s
	}
	return h
}

// String renders h on one line, for a status line:
//
//	in flight 12/32 of 64 (lowered: 9 of the last 20 attempts were answered 429); last minute: 40 429s, 3 timeouts; deadlines: judge 2s, rollout 41.23s; server limits: 600 requests/min, 150000 tokens/min
func (h Health) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "in flight %d/%d", h.InFlight, h.InFlightLimit)
	if h.InFlightLimit != h.MaxInFlight {
		fmt.Fprintf(&b, " of %d", h.MaxInFlight)
	}
	if h.LimitLowered != "" {
		fmt.Fprintf(&b, " (lowered: %s)", h.LimitLowered)
	}
	fmt.Fprintf(&b, "; last minute: %d 429s, %d timeouts", h.RateLimitedLastMinute, h.TimeoutsLastMinute)
	if len(h.Deadlines) > 0 {
		b.WriteString("; deadlines:")
		for i, stage := range slices.Sorted(maps.Keys(h.Deadlines)) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %s %s", stage, h.Deadlines[stage].Round(10*time.Millisecond))
		}
	}
	var limits []string
	if h.Requests != nil {
		limits = append(limits, fmt.Sprintf("%.0f requests/min", h.Requests.PerMinute))
	}
	if h.Tokens != nil {
		limits = append(limits, fmt.Sprintf("%.0f tokens/min", h.Tokens.PerMinute))
	}
	if len(limits) > 0 {
		b.WriteString("; server limits: " + strings.Join(limits, ", "))
	}
	return b.String()
}
