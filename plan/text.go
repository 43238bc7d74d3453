package plan

import (
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/figures"
	"github.com/rubricforge/rubricforge/job"

	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the plan as a table for a person.
func WriteText(w io.Writer, p *corpus.PlanDoc, dir string) {
	in := p.Input
	words := job.UnitWordsOf(p.Style)
	fmt.Fprintf(w, "plan for %s: %s sampled %s of %s (%.1f%%), %d measured; the pilot took %s\n",
		dir, figures.Count(float64(p.Sampled)), words.Units, figures.Count(float64(in.Unique)), 100*float64(p.Sampled)/float64(max(1, in.Unique)), p.Measured, figures.Hours(p.PilotSeconds))
	if in.BadLines > 0 {
		fmt.Fprintf(w, "  the input's %d bad rows are left out of the projection, as distill run skips them\n", in.BadLines)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\trequests\tprompt tokens\tcompletion tokens\tcost USD\t")
	for _, s := range append(append([]corpus.StageProjection{}, p.Stages...), p.Total) {
		cost := "no prices"
		if p.CostCounted {
			cost = s.CostUSD.Money()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.Stage, s.Requests.Count(), s.PromptTokens.Count(), s.CompletionTokens.Count(), cost)
	}
	_ = tw.Flush() // a failed write stays in w: distill's standard output keeps it, checked at exit (internal/errwriter)
	if !p.CostCounted {
		fmt.Fprintln(w, "cost: not projected: the job has no prices (prices: in the job file, or --free-models)")
	}
	writeBatchStages(w, p)
	leftOutBy, known := words.LeftOutBy, ""
	if in.KnownLeftOut > 0 {
		leftOutBy += " and the passage stage"
		known = fmt.Sprintf(" (%s known before the pilot: too short, or no text)", figures.Count(float64(in.KnownLeftOut)))
	}
	fmt.Fprintf(w, "records expected: %s of %s; left out by %s %s%s; failed %s\n",
		p.Records.Count(), figures.Count(float64(in.Unique)), leftOutBy, p.LeftOut.Count(), known, p.Failed.Count())
	fmt.Fprintf(w, "%s per record: %.1f (%.1f-%.1f)", words.Items, p.ItemsPerRecord.Value, p.ItemsPerRecord.Low, p.ItemsPerRecord.High)
	if v := p.Validity; v != nil {
		fmt.Fprintf(w, "; judged valid: %.1f%% (%.1f-%.1f%%)", 100*v.Value, 100*v.Low, 100*v.High)
	}
	if v := p.EmpiricalValidity; v != nil {
		fmt.Fprintf(w, "; %s: %.1f%% (%.1f-%.1f%%)", words.Empirical, 100*v.Value, 100*v.Low, 100*v.High)
	}
	fmt.Fprintln(w)
	if NoRecordReason(p) != "" {
		return // no advice on the time or budget of a run that would make nothing
	}
	writeWall(w, p)
	for _, b := range p.Budget {
		fmt.Fprintln(w, budgetLine(b))
	}
	if len(p.Budget) == 0 && p.CostCounted {
		fmt.Fprintf(w, "budget: none set; projected cost %s\n", p.Total.CostUSD.Money())
	}
}

func writeWall(w io.Writer, p *corpus.PlanDoc) {
	wl := p.Wall
	fmt.Fprintf(w, "wall time of distill run for the %s %s left: %s (%s-%s); the whole input in one run: %s\n",
		figures.Count(float64(p.Input.Rest)), job.UnitWordsOf(p.Style).Units, figures.Hours(wl.RestSeconds.Value), figures.Hours(wl.RestSeconds.Low), figures.Hours(wl.RestSeconds.High), figures.Hours(wl.WholeSeconds.Value))
	var limits []string
	for _, e := range p.Endpoints {
		l := fmt.Sprintf("%s (%s): concurrency %d", e.BaseURL, strings.Join(e.Stages, ", "), e.Concurrency)
		if e.RequestsPerMinute > 0 {
			l += fmt.Sprintf(", %s requests/min", figures.Count(e.RequestsPerMinute))
		}
		if e.TokensPerMinute > 0 {
			l += fmt.Sprintf(", %s tokens/min", figures.Count(e.TokensPerMinute))
		}
		if e.LimitSource != "" {
			l += " (" + e.LimitSource + ")"
		}
		limits = append(limits, l)
	}
	fmt.Fprintf(w, "  endpoints: %s\n", strings.Join(limits, "; "))
	var bounds []string
	for _, b := range wl.Bounds {
		bounds = append(bounds, fmt.Sprintf("%s %s", b.Constraint, figures.Hours(b.Seconds)))
	}
	fmt.Fprintf(w, "  binding: %s (each alone: %s)\n", wl.Binding, strings.Join(bounds, ", "))
	if wl.Relief != "" {
		fmt.Fprintf(w, "  %s\n", wl.Relief)
	}
}

// budgetLine is a budget check for a person.
func budgetLine(b corpus.BudgetCheck) string {
	what, limit, flag := b.Projected.Count()+" tokens", figures.Count(b.Value), "--max-total-tokens"
	if b.Limit == "max_cost_usd" {
		what, limit, flag = b.Projected.Money(), fmt.Sprintf("%g", b.Value), "--max-cost-usd"
		if b.Value >= 1000 {
			limit = figures.Count(b.Value)
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

// NoRecordReason says why a plan projects no record, when its pilot made
// none: what happened to the sampled units; "" when it made a record.
func NoRecordReason(p *corpus.PlanDoc) string {
	if len(p.Pilot) == 0 || p.Records.Value > 0 {
		return ""
	}
	words := job.UnitWordsOf(p.Style)
	var left, failed int
	for _, x := range p.Pilot {
		switch x.Outcome {
		case corpus.OutcomeLeftOut:
			left++
		case corpus.OutcomeFailed:
			failed++
		}
	}
	n := len(p.Pilot)
	var why []string
	if left > 0 {
		why = append(why, fmt.Sprintf("%s %s were left out by %s", allOrSome(left, n), words.Units, words.LeftOutBy))
	}
	if failed > 0 {
		why = append(why, fmt.Sprintf("%s %s failed", allOrSome(failed, n), words.Units))
	}
	return fmt.Sprintf("the pilot made no record: %s, so the whole input would likely make none; distill status shows why (the first rejected, with their rollouts' tails), failures.jsonl every reason",
		strings.Join(why, " and "))
}

// allOrSome is "all 4 sampled" or "3 of 4 sampled".
func allOrSome(k, n int) string {
	if k == n {
		return fmt.Sprintf("all %d sampled", n)
	}
	return fmt.Sprintf("%d of %d sampled", k, n)
}
