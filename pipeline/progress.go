package pipeline

import (
	"fmt"
	"github.com/rubricforge/rubricforge/job"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how the run goes: a bar when the output is a terminal, a
// plain status line every few seconds otherwise.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	every time.Duration
	last  string
}

func newProgress(w io.Writer, terminal bool, every time.Duration) *progress {
	if every <= 0 {
		every = 5 * time.Second
	}
	p := &progress{w: w, every: every}
	if w != nil && terminal {
		p.every = 250 * time.Millisecond
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetDescription("distill"),
			progressbar.OptionShowCount(),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	return p
}

func (p *progress) interval() time.Duration { return p.every }

// statusLine is one look at the run's counters.
type statusLine struct {
	done, failed, leftOut, inFlight int64
	total                           int64 // 0 while unknown
	requests, cached                int64
	tokens                          int64
	cost                            float64
	costCounted                     bool // the job has prices
	perMin                          float64
	eta                             *float64
	heldBack                        []string // endpoints held back now, and why
	batches                         string   // the batches' summary; "" without batches
}

func (s statusLine) String() string {
	var b strings.Builder
	total := "?"
	if s.total > 0 {
		total = fmt.Sprint(s.total)
	}
	fmt.Fprintf(&b, "%d/%s done, %d failed, %d left out, %d in flight | %d requests (%d cached), %s tokens, %s | %.1f problems/min",
		s.done, total, s.failed, s.leftOut, s.inFlight, s.requests, s.cached, humanCount(s.tokens), s.costText(), s.perMin)
	if s.eta != nil {
		fmt.Fprintf(&b, ", ETA %s", (time.Duration(*s.eta) * time.Second).Round(time.Second))
	}
	if s.batches != "" {
		b.WriteString(" | batches: " + s.batches)
	}
	for _, e := range s.heldBack {
		b.WriteString("\n  held back: " + e)
	}
	return b.String()
}

// costText is the cost so far, or that it is not counted (no prices).
func (s statusLine) costText() string {
	if !s.costCounted {
		return "cost not counted"
	}
	return fmt.Sprintf("$%.4f", s.cost)
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000_000:
		return fmt.Sprintf("%.2fG", float64(n)/1e9)
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func (p *progress) update(s statusLine) {
	if p.w == nil {
		return
	}
	if p.bar != nil {
		if s.total > 0 {
			p.bar.ChangeMax64(s.total)
		}
		p.bar.Describe(fmt.Sprintf("distill: %d failed, %d left out, %d in flight, %d req, %s |", s.failed, s.leftOut, s.inFlight, s.requests, s.costText()))
		_ = p.bar.Set64(s.done + s.failed + s.leftOut)
		return
	}
	line := s.String()
	if line != p.last {
		fmt.Fprintf(p.w, "distill: %s\n", line)
		p.last = line
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// statusLine is the current state of the run, for the progress output.
func (l *loop) statusLine() statusLine {
	l.fillReport()
	r := &l.report
	s := statusLine{
		done: r.Problems.Done, failed: r.Problems.Failed, leftOut: r.Problems.LeftOut,
		inFlight: l.input.inFlight.Load(), requests: r.LLM.Total.Requests, cached: r.LLM.Total.CacheHits,
		tokens: r.LLM.Total.PromptTokens + r.LLM.Total.CompletionTokens, cost: r.LLM.Total.CostUSD, costCounted: r.CostCounted,
		perMin: r.ProblemsPerMin, eta: r.ETASeconds, heldBack: degradedEndpoints(r.Endpoints),
	}
	if r.Batches != nil {
		s.batches = r.Batches.String()
	}
	switch {
	case l.input.readDone.Load():
		s.total = r.Problems.Unique
	case r.Problems.InputLines > 0:
		s.total = r.Problems.InputLines - r.Problems.BadLines - r.Problems.Duplicates
	}
	return s
}

// requestsOut sets the line's figures of the requests out at eps.
func (s *statusLine) requestsOut(j *job.Job, eps []EndpointHealth) {}
