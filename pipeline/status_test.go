package pipeline

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestStatusKnowsARunFromItsStart: before any checkpoint (the interval is
// long and the endpoint holds every request), `distill status` already
// shows a running run and the input's total, counted up front.
func TestStatusKnowsARunFromItsStart(t *testing.T) {
	t.Parallel()
	f, tap, opt := inProcessFixture(t, 30, sim.Config{})
	job := f.job
	job.Output.CheckpointInterval = time.Hour
	release := make(chan struct{})
	tap.handle = func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
		select {
		case <-release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		return nil, nil
	}
	var wg sync.WaitGroup
	var rep *Report
	var runErr error
	wg.Go(func() { rep, runErr = Run(context.Background(), job, opt) })

	var st *Status
	waitFor(t, "status to show the counted input", func() bool {
		var err error
		st, err = ReadStatus(job.Out)
		return err == nil && st.Report != nil && st.Report.Problems.InputLines > 0
	})
	close(release)
	if st.Report.Status != StatusRunning || st.Report.Problems.InputLines != int64(len(f.rows)) {
		t.Errorf("status during the run: %s with %d input lines, want running with %d", st.Report.Status, st.Report.Problems.InputLines, len(f.rows))
	}
	var text bytes.Buffer
	st.WriteText(&text)
	if !strings.Contains(text.String(), "of 30 input rows") {
		t.Errorf("status text lacks the total:\n%s", text.String())
	}
	wg.Wait()
	if runErr != nil || rep.Status != StatusFinished {
		t.Fatalf("run: %v %+v", runErr, rep)
	}
}

// TestETAFromTheStart: the ETA is known before the whole input is read,
// from the rows counted up front.
func TestETAFromTheStart(t *testing.T) {
	t.Parallel()
	l := &loop{started: time.Now().Add(-time.Minute), resolvedAtStart: 10}
	l.session = sessionCounts{done: 20, leftOut: 10}
	l.report.Problems = ProblemCounts{InputLines: 140, BadLines: 5, Duplicates: 5}
	l.fillRate(time.Now())
	// 140 rows - 10 bad or duplicate - 10 done before - 30 this session = 90 left at 30 per minute.
	if l.report.ETASeconds == nil || *l.report.ETASeconds < 170 || *l.report.ETASeconds > 190 {
		t.Fatalf("ETA %v, want about 180 s", l.report.ETASeconds)
	}
	l.input.readDone.Store(true)
	l.report.Problems.Pending = 30
	l.fillRate(time.Now())
	if *l.report.ETASeconds < 55 || *l.report.ETASeconds > 65 {
		t.Errorf("ETA once the input is read: %v s, want about 60", *l.report.ETASeconds)
	}
}

// TestReportShowsWhyARunIsSlow: after a burst of 429s the report names the
// endpoint, its lowered concurrency with the reason, and the 429s of the
// last minute; the status line shows the endpoint as held back.
func TestReportShowsWhyARunIsSlow(t *testing.T) {
	t.Parallel()
	f, tap, opt := inProcessFixture(t, 20, sim.Config{})
	var mu sync.Mutex
	limited := 0
	tap.handle = func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if limited >= 30 {
			return nil, nil
		}
		limited++
		resp := chatReply(r, "")
		resp.StatusCode, resp.Status = http.StatusTooManyRequests, "429 Too Many Requests"
		resp.Header.Set("Retry-After", "0")
		resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader(`{"error":{"message":"rate limited"}}`)), -1
		return resp, nil
	}
	rep, err := Run(context.Background(), f.job, opt)
	if err != nil || rep.Status != StatusFinished {
		t.Fatalf("run: %v %+v", err, rep)
	}
	if len(rep.Endpoints) != 1 {
		t.Fatalf("report endpoints: %+v, want the one endpoint", rep.Endpoints)
	}
	e := rep.Endpoints[0]
	if e.BaseURL != f.url || len(e.Stages) < 2 {
		t.Errorf("endpoint %q for stages %v, want %q for every stage", e.BaseURL, e.Stages, f.url)
	}
	if e.Health.RateLimitedLastMinute < 30 || e.Health.LimitLowered == "" {
		t.Errorf("after 30 429s in a row the report says %d 429s last minute, lowered %q", e.Health.RateLimitedLastMinute, e.Health.LimitLowered)
	}
	line := statusLine{heldBack: degradedEndpoints(rep.Endpoints)}.String()
	if !strings.Contains(line, "held back: "+f.url) || !strings.Contains(line, "429s") {
		t.Errorf("the status line does not say the endpoint is held back:\n%s", line)
	}
}
