package pipeline

import (
	"fmt"
	"io"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/figures"
	"github.com/rubricforge/rubricforge/job"
)

// writePlan prints the plan under a run's status and, once the real run has
// started, how its figures compare with it: the share of the input handled,
// and what it has spent and taken against the plan's figures for that share.
func (s *Status) writePlan(w io.Writer) {
	p := s.Plan
	if p == nil {
		return
	}
	fmt.Fprintf(w, "plan of %s: %s requests, %s tokens, cost %s, %s records; distill run of the %s %s left: %s (%s bound)\n",
		p.Created.Format(time.DateTime), p.Total.Requests.Count(), p.Tokens.Count(), planCost(p),
		p.Records.Count(), figures.Count(float64(p.Input.Rest)), job.UnitWordsOf(p.Style).Units, figures.Hours(p.Wall.RestSeconds.Value), p.Wall.Binding)
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
		100*share, figures.Count(float64(t.Requests)), figures.Count(share*p.Total.Requests.Value), figures.Count(float64(t.CacheHits)))
	fmt.Fprintf(w, ", tokens %s vs %s", figures.Count(float64(t.PromptTokens+t.CompletionTokens)), figures.Count(share*p.Tokens.Value))
	if p.CostCounted {
		planned := share * p.Total.CostUSD.Value
		fmt.Fprintf(w, ", cost %s vs %s", figures.Dollars(t.CostUSD), figures.Dollars(planned))
	}
	fmt.Fprintf(w, ", records %d vs %s", r.CorpusRows, figures.Count(share*p.Records.Value))
	if rest := p.Input.Rest; rest > 0 {
		sessionShare := float64(pc.DoneThisSession+pc.FailedThisSession+pc.LeftOutThisSession) / float64(rest)
		fmt.Fprintf(w, ", the last session's time %s vs %s", figures.Hours(r.ElapsedSeconds), figures.Hours(sessionShare*p.Wall.RestSeconds.Value))
	}
	fmt.Fprintln(w)
}

func planCost(p *corpus.PlanDoc) string {
	if !p.CostCounted {
		return "not projected (no prices)"
	}
	return p.Total.CostUSD.Money()
}
