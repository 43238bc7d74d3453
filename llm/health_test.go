package llm

import (
	"testing"
	"time"
)

func TestHealthString(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    Health
		want string
	}{
		{"quiet", Health{InFlight: 3, InFlightLimit: 64, MaxInFlight: 64},
			"in flight 3/64; last minute: 0 429s, 0 timeouts"},
		{"lowered, with deadlines and limits", Health{
			InFlight: 12, InFlightLimit: 32, MaxInFlight: 64, LimitLowered: "9 of the last 20 attempts were answered 429", LimitLoweredAt: at,
			RateLimitedLastMinute: 40, TimeoutsLastMinute: 3,
			Deadlines: map[string]time.Duration{"rollout": 41*time.Second + 234*time.Millisecond, "judge": 2 * time.Second},
			Requests:  &LearnedLimit{PerMinute: 600, Limit: 600}, Tokens: &LearnedLimit{PerMinute: 150000, Limit: 150000},
		}, "in flight 12/32 of 64 (lowered: 9 of the last 20 attempts were answered 429); last minute: 40 429s, 3 timeouts; " +
			"deadlines: judge 2s, rollout 41.23s; server limits: 600 requests/min, 150000 tokens/min"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.String(); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
