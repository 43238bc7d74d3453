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
	at    time.Time        // when last printed
	now   func() time.Time // the clock (tests set it)
}

// quietMax is the longest a status line that does not change goes
// unprinted: a run that waits (on retries, on batches) still shows it lives.
const quietMax = time.Minute

func newProgress(w io.Writer, terminal bool, every time.Duration) *progress {
	if every <= 0 {
		every = 5 * time.Second
	}
	p := &progress{w: w, every: every, now: time.Now}
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
	costCounted                     bool    // the job has prices
	perMin                          float64 // units done a minute
	units                           string  // what the run's units are called: problems, passages
	eta                             *float64
	heldBack                        []string // endpoints held back now, and why
	batches                         string   // the batches' summary; "" without batches
	// The requests out at the endpoints (sent, not yet answered), how
	// long the oldest has run and its stage; slow warns of it (slowWarning).
	sending     int64
	oldest      time.Duration
	oldestStage string
	slow        string
}

func (s statusLine) String() string {
	var b strings.Builder
	total := "?"
	if s.total > 0 {
		total = fmt.Sprint(s.total)
	}
	fmt.Fprintf(&b, "%d/%s done, %d failed, %d left out, %d in flight | %d requests (%d cached), %s tokens, %s | %.1f %s/min",
		s.done, total, s.failed, s.leftOut, s.inFlight, s.requests, s.cached, humanCount(s.tokens), s.costText(), s.perMin, s.unitsText())
	if s.eta != nil {
		fmt.Fprintf(&b, ", ETA %s", (time.Duration(*s.eta) * time.Second).Round(time.Second))
	}
	if s.batches != "" {
		b.WriteString(" | batches: " + s.batches)
	}
	if s.sending > 0 {
		fmt.Fprintf(&b, " | %d requests out, the oldest %s (%s)", s.sending, s.oldest.Round(time.Second), s.oldestStage)
	}
	for _, e := range s.heldBack {
		b.WriteString("\n  " + e)
	}
	if s.slow != "" {
		b.WriteString("\n  warning: " + s.slow)
	}
	return b.String()
}

// unitsText is what the line's units are called; problems unless set.
func (s statusLine) unitsText() string {
	if s.units == "" {
		return job.UnitWordsOf("").Units
	}
	return s.units
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
	line, now := s.String(), p.now()
	if line != p.last || now.Sub(p.at) >= quietMax {
		fmt.Fprintf(p.w, "distill: %s\n", line)
		p.last, p.at = line, now
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
		perMin: r.ProblemsPerMin, units: job.UnitWordsOf(l.job.Style).Units, eta: r.ETASeconds, heldBack: degradedEndpoints(r.Endpoints),
	}
	s.requestsOut(l.job, r.Endpoints)
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

// requestsOut sets the line's figures of the requests out at eps: how
// many, how long the oldest has run, and a warning when it runs far past
// the others of its stage (slowWarning).
func (s *statusLine) requestsOut(j *job.Job, eps []EndpointHealth) {
	var typical time.Duration
	s.sending, s.oldest, s.oldestStage = 0, 0, ""
	for _, e := range eps {
		h := e.Health
		s.sending += int64(h.Sending)
		if h.Sending > 0 && h.Oldest > s.oldest {
			s.oldest, s.oldestStage, typical = h.Oldest, h.OldestStage, h.OldestTypical
		}
	}
	s.slow = slowWarning(j, s.oldestStage, s.oldest, typical)
}

// Thresholds of the warning of a request far past the others: ten times
// its stage's median latency and at least a minute, or two minutes when
// no request of its stage has come back yet.
const (
	slowFactor  = 10
	slowFloor   = time.Minute
	slowNoneYet = 2 * time.Minute
)

// slowWarning says, when the oldest request out runs far past the others
// of its stage, what bounds it: a model that does not stop generates to
// its token limit, so it names the stage's max-tokens flag and setting.
func slowWarning(j *job.Job, stage string, age, typical time.Duration) string {
	switch {
	case stage == "":
		return ""
	case typical > 0 && age > max(slowFactor*typical, slowFloor):
		return fmt.Sprintf("a %s request has run %s, far past the others (%s); %s", stage, age.Round(time.Second), typical.Round(time.Second), tokenLimitHint(j, stage))
	case typical == 0 && age > slowNoneYet:
		return fmt.Sprintf("a %s request has run %s and no %s request has come back yet; %s", stage, age.Round(time.Second), stage, tokenLimitHint(j, stage))
	}
	return ""
}

// tokenLimitHint names the flag and job setting that bound a stage's
// replies, with the setting's value.
func tokenLimitHint(j *job.Job, stage string) string {
	flag, setting, v := "--max-tokens", "rollout.max_tokens", j.Rollout.MaxTokens
	switch stage {
	case job.StageDistill, job.StageAnalyze, job.StageSynthesize, job.StageEnrich, StageDecompose:
		flag, setting, v = "--distill-max-tokens", "distill.max_tokens", j.Distill.MaxTokens
	case job.StageJudge:
		flag, setting, v = "--judge-max-tokens", "judge.max_tokens", j.Judge.MaxTokens
	case job.StageEmpirical:
		flag, setting, v = "--empirical-max-tokens", "empirical.max_tokens", j.Empirical.MaxTokens
	}
	limit := fmt.Sprintf("%s %d", setting, v)
	if v == 0 {
		limit = setting + ": none, the server's limit"
	}
	return fmt.Sprintf("a model that does not stop generates to its token limit: %s (%s) bounds it, and limits.attempt_timeout (%s) ends the attempt",
		flag, limit, j.Limits.AttemptTimeout)
}
