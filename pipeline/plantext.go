package pipeline

import (
	"github.com/rubricforge/rubricforge/corpus"

	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// unitWords name, for a person, what a style's unit of work is, what
// leaves one out, and what its records hold.
type unitWords struct {
	unit, units, leftOutBy, items, empirical string
}

func unitWordsOf(style string) unitWords {
	if style == schema.StyleGrounded {
		return unitWords{"passage", "passages", "the quality checks", "criteria", "criteria whose score varies across closed-book answers"}
	}
	return unitWords{"problem", "problems", "selection", "rubric items", "empirically valid"}
}

// WritePlanText prints the plan as a table for a person.
func WritePlanText(w io.Writer, p *corpus.PlanDoc, dir string) {
	in := p.Input
	words := unitWordsOf(p.Style)
	fmt.Fprintf(w, "plan for %s: %s sampled %s of %s (%.1f%%), %d measured; the pilot took %s\n",
		dir, count(float64(p.Sampled)), words.units, count(float64(in.Unique)), 100*float64(p.Sampled)/float64(max(1, in.Unique)), p.Measured, hours(p.PilotSeconds))
	if in.BadLines > 0 {
		fmt.Fprintf(w, "  the input's %d bad rows are left out of the projection, as distill run skips them\n", in.BadLines)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\trequests\tprompt tokens\tcompletion tokens\tcost USD\t")
	for _, s := range append(append([]corpus.StageProjection{}, p.Stages...), p.Total) {
		cost := "no prices"
		if p.CostCounted {
			cost = money(s.CostUSD)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.Stage, countRange(s.Requests), countRange(s.PromptTokens), countRange(s.CompletionTokens), cost)
	}
	tw.Flush()
	if !p.CostCounted {
		fmt.Fprintln(w, "cost: not projected: the job has no prices (prices: in the job file, or --free-models)")
	}
	writeBatchStages(w, p)
	fmt.Fprintf(w, "records expected: %s of %s; left out by %s %s; failed %s\n",
		countRange(p.Records), count(float64(in.Unique)), words.leftOutBy, countRange(p.LeftOut), countRange(p.Failed))
	fmt.Fprintf(w, "%s per record: %.1f (%.1f-%.1f)", words.items, p.ItemsPerRecord.Value, p.ItemsPerRecord.Low, p.ItemsPerRecord.High)
	if v := p.Validity; v != nil {
		fmt.Fprintf(w, "; judged valid: %.1f%% (%.1f-%.1f%%)", 100*v.Value, 100*v.Low, 100*v.High)
	}
	if v := p.EmpiricalValidity; v != nil {
		fmt.Fprintf(w, "; %s: %.1f%% (%.1f-%.1f%%)", words.empirical, 100*v.Value, 100*v.Low, 100*v.High)
	}
	fmt.Fprintln(w)
	writeWall(w, p)
	for _, b := range p.Budget {
		fmt.Fprintln(w, budgetLine(b))
	}
	if len(p.Budget) == 0 && p.CostCounted {
		fmt.Fprintf(w, "budget: none set; projected cost %s\n", money(p.Total.CostUSD))
	}
}

func writeWall(w io.Writer, p *corpus.PlanDoc) {
	wl := p.Wall
	fmt.Fprintf(w, "wall time of distill run for the %s %s left: %s (%s-%s); the whole input in one run: %s\n",
		count(float64(p.Input.Rest)), unitWordsOf(p.Style).units, hours(wl.RestSeconds.Value), hours(wl.RestSeconds.Low), hours(wl.RestSeconds.High), hours(wl.WholeSeconds.Value))
	var limits []string
	for _, e := range p.Endpoints {
		l := fmt.Sprintf("%s (%s): concurrency %d", e.BaseURL, strings.Join(e.Stages, ", "), e.Concurrency)
		if e.RequestsPerMinute > 0 {
			l += fmt.Sprintf(", %s requests/min", count(e.RequestsPerMinute))
		}
		if e.TokensPerMinute > 0 {
			l += fmt.Sprintf(", %s tokens/min", count(e.TokensPerMinute))
		}
		if e.LimitSource != "" {
			l += " (" + e.LimitSource + ")"
		}
		limits = append(limits, l)
	}
	fmt.Fprintf(w, "  endpoints: %s\n", strings.Join(limits, "; "))
	var bounds []string
	for _, b := range wl.Bounds {
		bounds = append(bounds, fmt.Sprintf("%s %s", b.Constraint, hours(b.Seconds)))
	}
	fmt.Fprintf(w, "  binding: %s (each alone: %s)\n", wl.Binding, strings.Join(bounds, ", "))
	if wl.Relief != "" {
		fmt.Fprintf(w, "  %s\n", wl.Relief)
	}
}

// budgetLine is a budget check for a person.
func budgetLine(b corpus.BudgetCheck) string {
	what, limit, flag := countRange(b.Projected)+" tokens", count(b.Value), "--max-total-tokens"
	if b.Limit == "max_cost_usd" {
		what, limit, flag = money(b.Projected), fmt.Sprintf("%g", b.Value), "--max-cost-usd"
		if b.Value >= 1000 {
			limit = count(b.Value)
		}
	}
	if b.Covers >= 1 {
		if b.Projected.High > b.Value {
			return fmt.Sprintf("budget: projected %s; %s %s covers the input at the figure, not at the high end", what, flag, limit)
		}
		return fmt.Sprintf("budget: projected %s; %s %s covers the whole input", what, flag, limit)
	}
	return fmt.Sprintf("budget: projected %s; %s %s covers about %.0f%% of the input", what, flag, limit, 100*b.Covers)
}

// money renders a cost range: $4,210 (3,900-4,560), with cents below $100.
func money(r corpus.PlanRange) string {
	f := func(v float64) string {
		switch {
		case r.High < 1:
			return fmt.Sprintf("%.4f", v)
		case r.High < 100:
			return fmt.Sprintf("%.2f", v)
		}
		return count(v)
	}
	return fmt.Sprintf("$%s (%s-%s)", f(r.Value), f(r.Low), f(r.High))
}

func countRange(r corpus.PlanRange) string {
	return fmt.Sprintf("%s (%s-%s)", count(r.Value), count(r.Low), count(r.High))
}

// count renders a whole number with thousands separators.
func count(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// writePlan prints the plan under a run's status and, once the real run has
// started, how its figures compare with it: the share of the input handled,
// and what it has spent and taken against the plan's figures for that share.
func (s *Status) writePlan(w io.Writer) {
	p := s.Plan
	if p == nil {
		return
	}
	fmt.Fprintf(w, "plan of %s: %s requests, %s tokens, cost %s, %s records; distill run of the %s %s left: %s (%s bound)\n",
		p.Created.Format(time.DateTime), countRange(p.Total.Requests), countRange(p.Tokens), planCost(p),
		countRange(p.Records), count(float64(p.Input.Rest)), unitWordsOf(p.Style).units, hours(p.Wall.RestSeconds.Value), p.Wall.Binding)
	r := s.Report
	if r == nil || r.StoppedBy == StopPlan || p.Input.Unique == 0 {
		return
	}
	pc := r.Problems
	handled := pc.Done + pc.Failed + pc.LeftOut
	share := float64(handled) / float64(p.Input.Unique)
	t := r.LLM.Total
	// Requests sent, as llm.StageStats counts them: an answer read from the
	// cache was either sent by an earlier session (and counted then) or
	// never cost a request, so it is shown beside, not added.
	fmt.Fprintf(w, "  against the plan, for the %.1f%% of the input handled: requests sent %s vs %s planned (%s read from the cache)",
		100*share, count(float64(t.Requests)), count(share*p.Total.Requests.Value), count(float64(t.CacheHits)))
	fmt.Fprintf(w, ", tokens %s vs %s", count(float64(t.PromptTokens+t.CompletionTokens)), count(share*p.Tokens.Value))
	if p.CostCounted {
		planned := share * p.Total.CostUSD.Value
		fmt.Fprintf(w, ", cost %s vs %s", dollars(t.CostUSD), dollars(planned))
	}
	fmt.Fprintf(w, ", records %d vs %s", r.CorpusRows, count(share*p.Records.Value))
	if rest := p.Input.Rest; rest > 0 {
		sessionShare := float64(pc.DoneThisSession+pc.FailedThisSession+pc.LeftOutThisSession) / float64(rest)
		fmt.Fprintf(w, ", this session's time %s vs %s", hours(r.ElapsedSeconds), hours(sessionShare*p.Wall.RestSeconds.Value))
	}
	fmt.Fprintln(w)
}

func planCost(p *corpus.PlanDoc) string {
	if !p.CostCounted {
		return "not projected (no prices)"
	}
	return money(p.Total.CostUSD)
}

// dollars renders one cost: cents from $1 up, four decimals below.
func dollars(v float64) string {
	if v < 1 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
