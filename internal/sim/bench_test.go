package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkHandler measures the in-process handler at zero latency, one
// template kind at a time.
func BenchmarkHandler(b *testing.B) {
	rendered := renderedPrompts(b)
	for _, kind := range []Kind{KindRollout, KindDistillSRaR, KindDistillFactualProcess, KindJudgeItem, KindJudgeBatch, KindSatisfy} {
		b.Run(string(kind), func(b *testing.B) {
			benchHandler(b, New(Config{Answers: testProblems()}), rendered[kind])
		})
	}
}

// benchHandler sends msgs (64 seeds of them, in turn) to s in process and
// reports requests per second.
func benchHandler(b *testing.B, s *Server, msgs []prompts.Message) {
	bodies := make([][]byte, 64)
	for i := range bodies {
		var err error
		if bodies[i], err = json.Marshal(seeded(msgs, int64(i), 1)); err != nil {
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

// BenchmarkBatch100k streams a 100,000-row batch through the Files and
// Batch API over loopback HTTP: upload from disk, validate, answer every
// row into the output file on disk, download it line by line. peak-heap-MiB
// (the most heap the process held at once, client and server together,
// sampled every 2ms) stays far below the input's size: no file is ever held
// in memory. Run: go test -run '^$' -bench Batch100k -benchtime 1x ./internal/sim/
func BenchmarkBatch100k(b *testing.B) {
	const rows = 100_000
	rendered := renderedPrompts(b)
	kinds := []Kind{KindRollout, KindDistillSRaR, KindDistillFactualProcess, KindJudgeItem, KindJudgeBatch, KindSatisfy}
	path := filepath.Join(b.TempDir(), "input.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range rows {
		_, _ = w.Write(batchLine(b, fmt.Sprintf("row-%06d", i), seeded(rendered[kinds[i%len(kinds)]], int64(i), 1)))
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	c := startBatchServer(b, Config{Answers: testProblems(), BatchMaxRequests: rows, BatchMaxBytes: 1 << 30})
	runtime.GC()
	peak := newHeapPeak()
	defer peak.stop()
	var outBytes int64
	for b.Loop() {
		in := streamUpload(b, c.base, path)
		done := c.wait(c.create(in.ID, nil).ID)
		if done.Status != BatchCompleted || done.RequestCounts.Completed != rows {
			b.Fatalf("batch %+v", done)
		}
		outBytes = countRows(b, c.base+"/files/"+*done.OutputFileID+"/content", rows)
	}
	b.ReportMetric(float64(peak.stop())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(info.Size())/(1<<20), "input-MiB")
	b.ReportMetric(float64(outBytes)/(1<<20), "output-MiB")
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// streamUpload uploads the file at path without reading it into memory.
func streamUpload(b *testing.B, base, path string) fileObject {
	b.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		defer f.Close()
		err = mw.WriteField("purpose", "batch")
		var fw io.Writer
		if err == nil {
			fw, err = mw.CreateFormFile("file", filepath.Base(path))
		}
		if err == nil {
			_, err = io.Copy(fw, f)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	resp, err := http.Post(base+"/files", mw.FormDataContentType(), pr)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var obj fileObject
	body, _ := io.ReadAll(resp.Body)
	decodeOK(b, resp.StatusCode, body, &obj)
	return obj
}

// countRows downloads an output file line by line and checks its length.
func countRows(b *testing.B, url string, want int) int64 {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n, size := 0, int64(0)
	for sc.Scan() {
		n++
		size += int64(len(sc.Bytes())) + 1
	}
	if err := sc.Err(); err != nil || n != want {
		b.Fatalf("output: %d rows, %v; want %d", n, err, want)
	}
	return size
}

// heapPeak samples the live heap until stopped.
type heapPeak struct {
	done chan struct{}
	max  chan uint64
}

func newHeapPeak() *heapPeak {
	h := &heapPeak{done: make(chan struct{}), max: make(chan uint64, 1)}
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-h.done:
				h.max <- peak
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// stop ends the sampling and returns the peak; later calls return 0.
func (h *heapPeak) stop() uint64 {
	select {
	case <-h.done:
		return 0
	default:
	}
	close(h.done)
	return <-h.max
}

// BenchmarkGroundedHandler measures the in-process handler on the grounded
// stages bench-scale-grounded sends (analyze, synthesize, enrich, the
// validity judge in batch mode) at zero latency: the simulator's CPU per
// request, which competes with distill's for the machine at scale.
func BenchmarkGroundedHandler(b *testing.B) {
	ps := loadPrompts(b)
	analysis := schema.Analysis{Genre: "technical report", Contribution: "How heat pipes work.", Concepts: []string{"capillary", "condensate"},
		Depth: "mechanism", ReasoningMode: "causal explanation"}
	criteria := make([]schema.Criterion, 6)
	for i := range criteria {
		criteria[i] = schema.Criterion{ID: fmt.Sprintf("c%d", i+1), Weight: 2, Name: "Wick", Description: "Explains the wick's role.",
			RequiredElements: []string{"capillary action"}, ScoringGuide: "full or none", VerificationMethod: "check the passage",
			ExpectedKeywords: []string{"wick"}, ExpectedConcepts: []string{}}
	}
	const question = "Why does the capillary limit bound a heat pipe against gravity?"
	stages := []struct {
		kind   Kind
		render func() ([]prompts.Message, error)
	}{
		{KindGroundedAnalyze, func() ([]prompts.Message, error) {
			return ps.GroundedAnalyzeMessages(prompts.DocumentView{Title: "Heat pipes", Head: genPassage, Chars: len(genPassage), Outline: "- Heat pipes"})
		}},
		{KindGroundedSynthesize, func() ([]prompts.Message, error) {
			return ps.GroundedSynthesizeMessages("Heat pipes", genPassage, analysis, prompts.PassagePosition{Number: 1, Count: 1, Section: "Heat pipes"},
				prompts.RubricBounds{K: 1, MinCriteria: 5, MaxCriteria: 8, MinTotalWeight: 5})
		}},
		{KindGroundedEnrich, func() ([]prompts.Message, error) {
			return ps.GroundedEnrichMessages(genPassage, question, analysis, criteria)
		}},
		{KindGroundedJudgeBatch, func() ([]prompts.Message, error) {
			return ps.GroundedJudgeBatchMessages(genPassage, question, criteria)
		}},
	}
	for _, st := range stages {
		b.Run(string(st.kind), func(b *testing.B) {
			msgs, err := st.render()
			if err != nil {
				b.Fatal(err)
			}
			benchHandler(b, New(Config{}), msgs)
		})
	}
}
