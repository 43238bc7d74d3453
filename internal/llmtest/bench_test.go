package llmtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHandler measures the in-process handler at zero latency, one
// template kind at a time.
func BenchmarkHandler(b *testing.B) {
	rendered := renderedPrompts(b)
	for _, kind := range []Kind{KindRollout, KindDistillSRaR, KindDistillFactualProcess, KindJudgeItem, KindJudgeBatch, KindSatisfy} {
		b.Run(string(kind), func(b *testing.B) {
			s := New(Config{Answers: testProblems()})
			bodies := make([][]byte, 64)
			for i := range bodies {
				var err error
				if bodies[i], err = json.Marshal(seeded(rendered[kind], int64(i), 1)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(bodies[i%len(bodies)])))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkServerParallel measures requests over loopback HTTP with many
// clients at zero latency.
func BenchmarkServerParallel(b *testing.B) {
	_, url, stop, err := Start(Config{Answers: testProblems()})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	body, err := json.Marshal(seeded(renderedPrompts(b)[KindRollout], 1, 1))
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			var out chatResponse
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				b.Error(err)
			}
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
