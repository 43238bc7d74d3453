package llm_test

// Benchmarks of the client under faults and rate limits, against the
// simulated endpoint in process and in real time. Each runs a whole
// scenario once per iteration and reports its figures as metrics:
//
//	go test -run '^$' -bench 'Sporadic429|RateLimitedServer|HungRequests' -benchtime 1x ./llm

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/llm"
)

// scenario sends reqs from callers goroutines through a fresh client of a
// fresh simulated endpoint and returns the wall time and the endpoint.
func scenario(b *testing.B, cfg sim.Config, opt llm.Options, reqs []llm.Request, callers int) (time.Duration, *sim.Server, *llm.Client) {
	b.Helper()
	srv := sim.New(cfg)
	opt.HTTPClient = &http.Client{Transport: srv.Transport()}
	c, err := llm.NewClient(llm.Endpoint{BaseURL: "http://simulated.test/v1"}, opt, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if err := runAll(b.Context(), c, reqs, callers); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), srv, c
}

// BenchmarkSporadic429: 2,000 requests at 100ms latency, 64 in flight;
// throughput with 4% of attempts answered 429 (Retry-After 1s) relative
// to the fault-free run (target >= 0.7). With 64 callers every caller
// waiting out a Retry-After leaves a slot idle; with 256 (problems
// admitted beyond the request slots) the slots stay busy.
func BenchmarkSporadic429(b *testing.B) {
	reqs := rollouts(b, 2000)
	for _, callers := range []int{64, 256} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			opt := llm.Options{MaxInFlight: 64, MaxAttempts: 10}
			base := sim.Config{Latency: 100 * time.Millisecond, Seed: simSeed}
			for b.Loop() {
				free, _, _ := scenario(b, base, opt, reqs, callers)
				faulty := base
				faulty.Faults = sim.Faults{RateLimited: 0.04, RetryAfter: time.Second}
				slow, _, c := scenario(b, faulty, opt, reqs, callers)
				b.ReportMetric(free.Seconds()/slow.Seconds(), "throughput_ratio")
				b.ReportMetric(float64(len(reqs))/free.Seconds(), "fault-free_req/s")
				b.ReportMetric(float64(len(reqs))/slow.Seconds(), "with-429s_req/s")
				b.ReportMetric(float64(c.Health().InFlightLimit), "final_in_flight_limit")
			}
		})
	}
}

// BenchmarkRateLimitedServer: a server limited to 1,200 requests or
// 300,000 tokens per minute, 100ms latency, 64 callers, no limit
// configured in the client. It reports the share of the limit used over
// the last 15s (after the first minute's allowance is spent; target >=
// 0.9) and the share of attempts answered 429 (target <= 0.05).
func BenchmarkRateLimitedServer(b *testing.B) {
	for _, tt := range []struct {
		name     string
		rpm, tpm int
		requests int
	}{{"rpm=1200", 1200, 0, 1600}, {"tpm=300000", 0, 300000, 1500}} {
		b.Run(tt.name, func(b *testing.B) {
			reqs := rollouts(b, tt.requests)
			cfg := sim.Config{Latency: 100 * time.Millisecond, Seed: simSeed, LimitRPM: tt.rpm, LimitTPM: tt.tpm, KeepLog: true}
			for b.Loop() {
				_, srv, _ := scenario(b, cfg, llm.Options{MaxInFlight: 64, MaxAttempts: 20}, reqs, 64)
				used, over := limitUse(srv.Log(), 15*time.Second, tt.rpm, tt.tpm)
				b.ReportMetric(used, "limit_used")
				b.ReportMetric(over, "429_share")
			}
		})
	}
}

// limitUse is the share of the binding limit the admitted requests used
// over the last window of the log, and the share of attempts refused.
func limitUse(log []sim.Entry, window time.Duration, rpm, tpm int) (used, over float64) {
	end := log[len(log)-1].Time
	var requests, tokens, refused float64
	for _, e := range log {
		switch {
		case e.OverLimit:
			refused++
		case e.Time.After(end.Add(-window)):
			requests++
			tokens += float64(e.Tokens)
		}
	}
	perMinute := float64(time.Minute) / float64(window)
	if rpm > 0 {
		used = requests * perMinute / float64(rpm)
	}
	if tpm > 0 {
		used = max(used, tokens*perMinute/float64(tpm))
	}
	return used, refused / float64(len(log))
}

// BenchmarkHungRequests: 1,200 requests (300 problems x 4 rollouts) from
// 64 fixed callers, 50ms latency, 4% of attempts hung and held 30s.
// Goodput efficiency = ideal time / measured time, where ideal = attempts
// x (latency + 4% x 30s) / 64 as in issue 6 (target >= 0.5). The learned
// deadline cuts a hung attempt at its 10s floor instead of 30s.
func BenchmarkHungRequests(b *testing.B) {
	reqs := rollouts(b, 1200)
	cfg := sim.Config{Latency: 50 * time.Millisecond, Seed: simSeed, Faults: sim.Faults{Hang: 0.04, HangMax: 30 * time.Second}}
	for b.Loop() {
		took, srv, c := scenario(b, cfg, llm.Options{MaxInFlight: 64, MaxAttempts: 10}, reqs, 64)
		ideal := float64(srv.Count()) * (0.050 + 0.04*30) / 64
		b.ReportMetric(ideal/took.Seconds(), "goodput_efficiency")
		b.ReportMetric(took.Seconds(), "wall_s")
		b.ReportMetric(float64(c.Health().TimeoutsLastMinute), "cut_attempts")
	}
}
