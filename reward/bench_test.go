package reward

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
	"github.com/rubricforge/rubricforge/schema"
)

// benchRubric is a 10-item SRaR rubric.
func benchRubric() []schema.Item {
	types := []string{schema.TypeSuggest, schema.TypeSuggest, schema.TypeSuggest, schema.TypeSuggest, schema.TypeSuggest,
		schema.TypePitfall, schema.TypePitfall, schema.TypeBonus, schema.TypeBonus, schema.TypeAnswer}
	items := make([]schema.Item, len(types))
	for j, typ := range types {
		items[j] = item(int32(j+1), typ, float64(1+j%3))
	}
	return items
}

// benchResponse is a response of about 1.5 KB in steps steps.
func benchResponse(rng *rand.Rand, steps int, answer string) string {
	var b strings.Builder
	b.WriteString("Let us work through it.\n")
	for k := 1; k <= steps; k++ {
		fmt.Fprintf(&b, "### Step %d: Part %d\n", k, k)
		for range 6 {
			fmt.Fprintf(&b, "We compute %d + %d = %d, which gives the next quantity. ", rng.IntN(100), rng.IntN(100), rng.IntN(200))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "<answer>%s</answer>", answer)
	return b.String()
}

// benchGroup is a group of n judged rollouts with random verdicts.
func benchGroup(n int, items []schema.Item) []Rollout {
	rng := rand.New(rand.NewPCG(7, 7))
	rs := make([]Rollout, n)
	for i := range rs {
		answer := "5"
		if i%3 == 0 {
			answer = "7"
		}
		steps := 3 + rng.IntN(4)
		rs[i] = Analyze(benchResponse(rng, steps, answer), "5")
		rs[i].Verdicts = make([]schema.Satisfaction, len(items))
		for j := range items {
			rs[i].Verdicts[j] = sat(items[j].ID, rng.IntN(2) == 0, int32(rng.IntN(steps+2)-1))
		}
	}
	return rs
}

// BenchmarkFormulas is the formulas' throughput: ScoreGroup of 16 rollouts
// against a 10-item rubric, in item verdicts per second.
func BenchmarkFormulas(b *testing.B) {
	items := benchRubric()
	lab := testLabel(items)
	rs := benchGroup(16, items)
	p := DefaultParams()
	for _, scheme := range schema.Schemes {
		b.Run(scheme, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ScoreGroup(p, scheme, lab, rs)
			}
			b.ReportMetric(float64(len(rs)*len(items)*b.N)/b.Elapsed().Seconds(), "verdicts/s")
		})
	}
	b.Run("srar-steps-only", func(b *testing.B) {
		d := make([][]StepDelta, len(rs))
		for b.Loop() {
			for i := range rs {
				d[i] = SRaRDeltas(p, items, rs[i].Verdicts, len(rs[i].Steps)).Steps
			}
			NormalizeSteps(d, p.Epsilon)
		}
		b.ReportMetric(float64(len(rs)*len(items)*b.N)/b.Elapsed().Seconds(), "verdicts/s")
	})
}

// BenchmarkScoreGroupCached is rewardd's own time for POST /v1/score_group
// with 16 responses whose verdicts are cached (the judge is not called):
// decoding, answer checks, step spans, scoring and encoding. It reports the
// 50th and 99th percentile per request.
func BenchmarkScoreGroupCached(b *testing.B) {
	lab := demoLabel()
	lab.Rubric = benchRubric()
	h := newHarness(b, []schema.Label{lab})
	rng := rand.New(rand.NewPCG(9, 9))
	responses := make([]string, 16)
	for i := range responses {
		responses[i] = benchResponse(rng, 3+rng.IntN(4), []string{"5", "7"}[i%2])
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
	sent := h.sim.Count()
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		call()
		times = append(times, time.Since(start))
	}
	if h.sim.Count() != sent {
		b.Fatalf("the judge was called %d times during the benchmark", h.sim.Count()-sent)
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
