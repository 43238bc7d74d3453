package server

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkScoreGroupCached is rewardd's own time for POST /v1/score_group
// with 16 responses whose verdicts are cached (the judge is not called):
// decoding, answer checks, step spans, scoring and encoding. It reports the
// 50th and 99th percentile per request.
func BenchmarkScoreGroupCached(b *testing.B) {
	lab := rewardtest.DemoLabel()
	lab.Rubric = rewardtest.BenchRubric()
	h := newHarness(b, []schema.Label{lab})
	rng := rand.New(rand.NewPCG(9, 9))
	responses := make([]string, 16)
	for i := range responses {
		responses[i] = rewardtest.BenchResponse(rng, 3+rng.IntN(4), []string{"5", "7"}[i%2])
	}
	body := mustJSON(b, map[string]any{"problem_id": lab.ID, "scheme": "srar", "responses": responses})
	call := func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/score_group", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	call() // judge every response once
	sent := h.simulator.Count()
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		call()
		times = append(times, time.Since(start))
	}
	if h.simulator.Count() != sent {
		b.Fatalf("the judge was called %d times during the benchmark", h.simulator.Count()-sent)
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkLoad100K loads a synthesized run directory of 100,000 records (a
// 600-byte problem, 8 judged rubric items and 4 rollouts of 1 KB each) and
// reports the time and the peak heap the load adds.
func BenchmarkLoad100K(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	synthesizeRun(b, dir, n)
	for b.Loop() {
		runtime.GC()
		base := heapBytes()
		var peak atomic.Uint64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				if h := heapBytes(); h > peak.Load() {
					peak.Store(h)
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		start := time.Now()
		x, st, err := LoadIndex(dir, nil)
		elapsed := time.Since(start)
		close(stop)
		<-sampled
		if err != nil || st.Loaded != n {
			b.Fatalf("loaded %+v: %v", st, err)
		}
		runtime.GC()
		retained := heapBytes() - base
		runtime.KeepAlive(x)
		b.ReportMetric(elapsed.Seconds(), "load-s")
		b.ReportMetric(float64(peak.Load()-base)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(retained)/(1<<20), "index-MiB")
	}
}

func heapBytes() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

func synthesizeRun(b *testing.B, dir string, n int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(100, 100))
	words := strings.Fields("let the triangle have sides a b c with area equal to twice the radius of its circle find the sum of all integer values of n such that the expression is a perfect square and prove it")
	prose := func(size int) string {
		var s strings.Builder
		for s.Len() < size {
			s.WriteString(words[rng.IntN(len(words))])
			s.WriteByte(' ')
		}
		return s.String()
	}
	run, err := corpus.Open(dir, corpus.Options{ToolVersion: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		rec := indexRecord(0, nil)
		rec.ID, rec.Problem, rec.Answer = fmt.Sprintf("%016x", i), prose(600), fmt.Sprint(i%997)
		for j := range 8 {
			it := schema.Item{ID: int32(j + 1), Type: schema.ItemTypes[j%4], Text: prose(150), Weight: 1}
			it.Polarity = schema.PolarityOf(it.Type)
			valid, reason := true, prose(80)
			it.Valid, it.ValidReason = &valid, &reason
			rec.Rubric = append(rec.Rubric, it)
		}
		rec.Rollouts = nil
		for k := range 4 {
			rec.Rollouts = append(rec.Rollouts, schema.Rollout{Index: int32(k), Text: prose(1024), FinishReason: "stop"})
		}
		if err := run.Append(&rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		b.Fatal(err)
	}
}
