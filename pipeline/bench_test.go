package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/prompts"
)

// BenchmarkPipeline runs the whole job (8 rollouts, distillation, batch
// judging) against the simulated endpoint at 20 ms mean latency and
// concurrency 512. It reports efficiency: the ideal time (requests x mean
// latency / concurrency) over the measured time; requests per second; and the
// peak Go heap in use, which includes the in-process simulated endpoint.
//
// The loopback sub-benchmarks speak HTTP over 127.0.0.1, so both sides' HTTP
// stacks share this machine's cores; the in-process ones hand each request
// to the simulated endpoint through its http.RoundTripper, which measures the
// pipeline and its go-openai client without the socket and server work.
func BenchmarkPipeline(b *testing.B) {
	for _, transport := range []string{"loopback", "in-process"} {
		for _, n := range []int{2_500, 10_000} {
			b.Run(fmt.Sprintf("transport=%s/problems=%d", transport, n), func(b *testing.B) { benchPipeline(b, n, transport == "in-process") })
		}
	}
}

func benchPipeline(b *testing.B, problems int, inProcess bool) {
	const (
		latency     = 20 * time.Millisecond
		concurrency = 512
	)
	dir := b.TempDir()
	rows := runtest.MakeProblems(problems)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(b, input, rows)
	cfg := sim.Config{Answers: runtest.AnswersOf(rows), Latency: latency}
	var opt Options
	srv, url := runtest.StartSim(b, cfg)
	if inProcess {
		srv = sim.New(cfg)
		b.Cleanup(srv.Close)
		url = "http://sim.invalid/v1"
		opt.HTTPClient = &http.Client{Transport: srv.Transport()}
	}
	b.ResetTimer()
	for i := range b.N {
		job := runtest.TestJob(input, filepath.Join(dir, fmt.Sprintf("run-%d", i)), url)
		job.Rollout.N = 8
		job.Limits.Concurrency = concurrency
		job.Limits.AttemptTimeout = time.Minute
		job.Output.ShardRows = 1000
		job.Output.CheckpointInterval = 10 * time.Second

		runtime.GC()
		peak := watchHeap()
		before := srv.Count()
		start := time.Now()
		rep, err := Run(context.Background(), job, opt)
		elapsed := time.Since(start)
		peakBytes := peak()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Status != StatusFinished {
			b.Fatalf("status %s: %s", rep.Status, rep.StopReason)
		}
		requests := srv.Count() - before
		ideal := time.Duration(float64(requests) * float64(latency) / concurrency)
		b.ReportMetric(ideal.Seconds()/elapsed.Seconds(), "efficiency")
		b.ReportMetric(float64(requests)/elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(peakBytes)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(requests), "requests")
		b.ReportMetric(elapsed.Seconds(), "run-s")
	}
}

// watchHeap samples the heap in use until the returned function is called,
// which returns the largest sample.
func watchHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(stop)
		wg.Wait()
		return peak.Load()
	}
}

// BenchmarkEndpointCeiling measures what this machine can do at all: a
// minimal client (one pre-rendered prompt, encoding/json, net/http, no
// retries, cache or pipeline) sending rollout requests to the same simulated
// endpoint at 20 ms latency and concurrency 512. The simulated endpoint runs
// in this process, so its own CPU shares the cores; BenchmarkPipeline's
// req/s is best read against this ceiling as well as against the ideal.
func BenchmarkEndpointCeiling(b *testing.B) {
	const (
		latency     = 20 * time.Millisecond
		concurrency = 512
		requests    = 20_000
	)
	rows := runtest.MakeProblems(2_000)
	_, url := runtest.StartSim(b, sim.Config{Answers: runtest.AnswersOf(rows), Latency: latency})
	ps, err := prompts.Load("")
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency}}
	defer hc.CloseIdleConnections()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		var failed atomic.Int64
		slots := make(chan struct{}, concurrency)
		start := time.Now()
		for i := range requests {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				msgs, _ := ps.RolloutMessages(rows[i%len(rows)].Problem)
				body, _ := json.Marshal(map[string]any{"model": "simulated", "messages": msgs, "seed": i})
				resp, err := hc.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					failed.Add(1)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var out struct {
					Choices []struct{ Message struct{ Content string } }
				}
				if json.Unmarshal(raw, &out) != nil || len(out.Choices) != 1 {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d requests failed", n)
		}
		ideal := time.Duration(float64(requests) * float64(latency) / concurrency)
		b.ReportMetric(float64(requests)/elapsed.Seconds(), "req/s")
		b.ReportMetric(ideal.Seconds()/elapsed.Seconds(), "efficiency")
	}
}

// BenchmarkFaultMix is issue 6's fault mix: 600 problems, n=4, concurrency
// 64, 100 ms mean latency, and 4% each of 429 with Retry-After 1 s, 500, a
// hang held 5 s, a truncated body and malformed output, against the
// simulated endpoint in this process. It reports goodput efficiency: the
// ideal time, attempts x (latency + 4% x hang + 4% x Retry-After) /
// concurrency, over the measured time (target >= 0.5).
func BenchmarkFaultMix(b *testing.B) {
	const (
		problems    = 600
		latency     = 100 * time.Millisecond
		concurrency = 64
		rate        = 0.04
		hang        = 5 * time.Second
		retryAfter  = time.Second
	)
	dir := b.TempDir()
	rows := runtest.MakeProblems(problems)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(b, input, rows)
	faults := sim.Faults{RateLimited: rate, ServerError: rate, Hang: rate, Truncate: rate, Malformed: rate, RetryAfter: retryAfter, HangMax: hang}
	srv := sim.New(sim.Config{Answers: runtest.AnswersOf(rows), Latency: latency, Faults: faults})
	b.Cleanup(srv.Close)
	opt := Options{HTTPClient: &http.Client{Transport: srv.Transport()}}
	b.ResetTimer()
	for i := range b.N {
		jb := runtest.TestJob(input, filepath.Join(dir, fmt.Sprintf("run-%d", i)), "http://sim.invalid/v1")
		jb.Limits = job.DefaultJob().Limits
		jb.Limits.Concurrency = concurrency
		jb.Output.ShardRows = 1000
		jb.Output.CheckpointInterval = 10 * time.Second
		before := srv.Count()
		start := time.Now()
		rep, err := Run(context.Background(), jb, opt)
		elapsed := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Status != StatusFinished {
			b.Fatalf("status %s: %s", rep.Status, rep.StopReason)
		}
		checkAccounted(b, jb.Out, rows, rep)
		attempts := srv.Count() - before
		perAttempt := float64(latency) + rate*float64(hang) + rate*float64(retryAfter)
		ideal := time.Duration(float64(attempts) * perAttempt / concurrency)
		b.ReportMetric(ideal.Seconds()/elapsed.Seconds(), "goodput-efficiency")
		b.ReportMetric(float64(attempts), "attempts")
		b.ReportMetric(ideal.Seconds(), "ideal-s")
		b.ReportMetric(elapsed.Seconds(), "run-s")
	}
}
