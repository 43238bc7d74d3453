package plan

import (
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/figures"
	"github.com/rubricforge/rubricforge/pipeline"

	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/schema"
)

// planWallOptions are the settings the wall time depends on.
type planWallOptions struct {
	concurrency int
	inFlight    int // problems in flight
	endpoints   []corpus.PlanEndpoint
}

const (
	bootstrapRounds = 1000
	bootstrapSeed   = 20
)

// project turns the pilot's problems into the plan. Totals are the mean
// per sampled problem times the input's unique problems; the intervals
// come from resampling the pilot's problems with replacement.
func project(j *job.Job, in *planInput, probs []corpus.PilotProblem, rest int64, rep *pipeline.Report, earlier *corpus.PlanDoc) *corpus.PlanDoc {
	plan := &corpus.PlanDoc{
		Input:       corpus.PlanInput{Rows: in.rows, BadLines: in.bad, Duplicates: in.dups, Unique: in.unique, Sources: in.sources, Rest: rest, KnownLeftOut: in.known},
		Sampled:     in.sample.Len(),
		Measured:    len(probs),
		CostCounted: len(j.Prices) > 0,
		Style:       j.Style,
		Pilot:       probs,
		Endpoints:   planEndpoints(j, in.decompose, rep, earlier),
	}
	wo := planWallOptions{concurrency: j.Limits.Concurrency, inFlight: pipeline.ProblemsInFlight(j), endpoints: plan.Endpoints}
	stages := pilotStages(j, probs)
	plan.BatchStages = batchStages(j, stages)
	// The pilot stands for the passages it could have sampled: not those
	// the passage stage is known to leave out, which are left out exactly,
	// at no cost and no time.
	pop, work := in.unique-in.known, max(0, rest-in.knownPending)
	est := func(ps []corpus.PilotProblem) map[string]float64 {
		out := estimate(j, ps, stages, pop, in.docs, work, wo)
		out["left_out"] += float64(in.known)
		return out
	}
	full, rg := bootstrapRanges(probs, pop, bootstrapRounds, est)
	rg = withOutcomeIntervals(probs, pop, in.known, stages, full, rg)
	for _, s := range append(stages, "total") {
		sp := corpus.StageProjection{Stage: s, Requests: rg(s + ".requests"), PromptTokens: rg(s + ".prompt"), CompletionTokens: rg(s + ".completion"), CostUSD: rg(s + ".cost")}
		if c := rg(s + ".cached"); c.High > 0 {
			sp.CachedPromptTokens = &c
		}
		if s == "total" {
			plan.Total = sp
		} else {
			plan.Stages = append(plan.Stages, sp)
		}
	}
	plan.Tokens = rg("total.tokens")
	plan.Records, plan.LeftOut, plan.Failed = rg("records"), rg("left_out"), rg("failed")
	plan.ItemsPerRecord = rg("items_per_record")
	if _, ok := full["validity"]; ok {
		v := rg("validity")
		plan.Validity = &v
	}
	if _, ok := full["empirical_validity"]; ok {
		v := rg("empirical_validity")
		plan.EmpiricalValidity = &v
	}
	plan.Wall = wallOf(full, rg)
	plan.Wall.Relief = relief(j, probs, stages, work, wo, plan.Wall)
	if plan.CostCounted && rep != nil {
		plan.SpentUSD = rep.LLM.Total.CostUSD
		share := float64(rest) / float64(max(1, in.unique))
		t := plan.Total.CostUSD
		plan.WithSpent = &corpus.PlanRange{Value: plan.SpentUSD + share*t.Value, Low: plan.SpentUSD + share*t.Low, High: plan.SpentUSD + share*t.High}
	}
	plan.Budget = budgetChecks(j, plan)
	return plan
}

// bootstrapRanges estimates the figures of est over probs, the pilot's
// problems out of unique, and returns each one's corpus.PlanRange: the figure with a
// 95% interval from resampling probs with replacement, nRounds times. A
// resample draws whole problems, each with its outcome and its tokens, so
// the interval carries the sampling error of the selection rate (the
// share of problems that make records, and so pay for every stage) with
// that of the tokens per problem; TestPlanRangesCoverTheTruth measures it. full is the
// figures of probs themselves.
func bootstrapRanges(probs []corpus.PilotProblem, unique int64, nRounds int, est func([]corpus.PilotProblem) map[string]float64) (full map[string]float64, rg func(key string) corpus.PlanRange) {
	full = est(probs)
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(len(probs))))
	rounds := make([]map[string]float64, nRounds)
	re := make([]corpus.PilotProblem, len(probs))
	for i := range rounds {
		for j := range re {
			re[j] = probs[rng.IntN(len(probs))]
		}
		rounds[i] = est(re)
	}
	// Sampling without replacement from a finite input: the spread shrinks
	// by the finite population correction, to nothing for the whole input.
	fpc := math.Sqrt(max(0, 1-float64(len(probs))/float64(unique)))
	return full, func(key string) corpus.PlanRange { return rangeOf(key, full, rounds, fpc) }
}

// withOutcomeIntervals widens the ranges of rg where the bootstrap cannot
// see the uncertainty of the outcome shares: a pilot in which every
// sampled unit made a record resamples to the same share every time, so
// its ranges have no width, though a pilot of n rules out only a share of
// about 4/n left out. The records, left-out and failed counts take at
// least the Wilson 95% interval of their share in the pilot (scaled like
// the bootstrap's, by the finite population correction; known adds the
// passages known to be left out); and when the pilot saw no unit that
// made no record, every request, token and cost figure takes at least the
// low end such units would give if they cost nothing, and the high end
// they would give if each went back for one repair (about its cost again).
func withOutcomeIntervals(probs []corpus.PilotProblem, pop, known int64, stages []string, full map[string]float64, rg func(string) corpus.PlanRange) func(string) corpus.PlanRange {
	n := int64(len(probs))
	if n == 0 || pop <= 0 {
		return rg
	}
	var counts = map[string]int64{}
	for _, p := range probs {
		switch p.Outcome {
		case corpus.OutcomeRecord:
			counts["records"]++
		case corpus.OutcomeLeftOut:
			counts["left_out"]++
		default:
			counts["failed"]++
		}
	}
	fpc := math.Sqrt(max(0, 1-float64(n)/float64(pop)))
	widen := func(r corpus.PlanRange, lo, hi float64) corpus.PlanRange {
		r.Low = min(r.Low, r.Value-(r.Value-lo)*fpc)
		r.High = max(r.High, r.Value+(hi-r.Value)*fpc)
		return r
	}
	costly := map[string]bool{"total.tokens": true}
	for _, s := range append(slices.Clone(stages), "total") {
		for _, k := range []string{".requests", ".prompt", ".completion", ".cost"} {
			costly[s+k] = true
		}
	}
	_, noRecordHigh := wilson(n-counts["records"], n)
	return func(key string) corpus.PlanRange {
		r := rg(key)
		switch {
		case key == "records" || key == "left_out" || key == "failed":
			shift := 0.0
			if key == "left_out" {
				shift = float64(known)
			}
			lo, hi := wilson(counts[key], n)
			return widen(r, shift+lo*float64(pop), shift+hi*float64(pop))
		case costly[key] && counts["records"] == n:
			// Units the pilot did not meet: left out at no cost, or sent back
			// for repair once, at about the cost again.
			return widen(r, r.Value*(1-noRecordHigh), r.Value*(1+noRecordHigh))
		}
		return r
	}
}

// wilson is the Wilson score 95% interval of a share of k in n.
func wilson(k, n int64) (lo, hi float64) {
	const z = 1.959964
	p, nn := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nn
	mid := (p + z*z/(2*nn)) / den
	half := z * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn)) / den
	return max(0, mid-half), min(1, mid+half)
}

// rangeOf is the figure key of full with the 2.5 and 97.5 percentiles of
// the rounds, their distance from it scaled by fpc.
func rangeOf(key string, full map[string]float64, rounds []map[string]float64, fpc float64) corpus.PlanRange {
	vals := make([]float64, 0, len(rounds))
	for _, r := range rounds {
		if v, ok := r[key]; ok {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	r := corpus.PlanRange{Value: full[key], Low: full[key], High: full[key]}
	if len(vals) > 0 {
		lo, hi := vals[int(0.025*float64(len(vals)-1))], vals[int(math.Ceil(0.975*float64(len(vals)-1)))]
		r.Low = min(r.Value, r.Value-(r.Value-lo)*fpc)
		r.High = max(r.Value, r.Value+(hi-r.Value)*fpc)
	}
	return r
}

// pilotStages lists the stages that sent requests, in the pipeline order
// of the job's style (then any other style's, for figures read back from an
// older plan); a decomposition's decompose stage comes first. A panel's
// judges follow their stage, in the job's order (each counts its requests
// under job.PanelJudgeRef(stage, name): judge[NAME]).
func pilotStages(jb *job.Job, probs []corpus.PilotProblem) []string {
	var out []string
	other := schema.StyleGrounded
	if jb.Style == schema.StyleGrounded {
		other = schema.StyleSRaR
	}
	sent := func(name string) bool {
		return slices.ContainsFunc(probs, func(p corpus.PilotProblem) bool { _, ok := p.Stages[name]; return ok })
	}
	names := append([]string{pipeline.StageDecompose}, pipeline.StageNames(jb.Style)...)
	seen := map[string]bool{}
	for _, name := range append(names, pipeline.StageNames(other)...) {
		if seen[name] {
			continue // judge and empirical are in both styles
		}
		seen[name] = true
		if sent(name) {
			out = append(out, name)
		}
		for _, p := range jb.Panels() {
			for _, jd := range p.Judges {
				if ref := job.PanelJudgeRef(name, jd.Name); p.Stage == name && sent(ref) {
					out = append(out, ref)
				}
			}
		}
	}
	return out
}

// estimate computes every projected figure from a set of pilot problems:
// per-problem means scaled to the input's unique problems.
func estimate(j *job.Job, ps []corpus.PilotProblem, stages []string, unique, docs, rest int64, wo planWallOptions) map[string]float64 {
	out := estimateCounts(j, ps, stages, unique, docs)
	for _, b := range wallBounds(j, ps, stages, rest, wo) {
		out["bound."+b.Constraint] = b.Seconds
	}
	out["wall.rest"] = wallSeconds(j, ps, stages, rest, wo)
	out["wall.whole"] = wallSeconds(j, ps, stages, unique, wo)
	return out
}

// estimateCounts is estimate without the wall times: outcomes, requests,
// tokens, cost and validity. docs is the number of documents of a grounded
// job (0 otherwise): its analyses are one per document.
func estimateCounts(jb *job.Job, ps []corpus.PilotProblem, stages []string, unique, docs int64) map[string]float64 {
	out := make(map[string]float64, 5*len(stages)+12) // what it ends up holding
	n := float64(len(ps))
	scale := float64(unique) / n
	// The plan calls this once per bootstrap round: the stages' prices are
	// looked up once, and the sums kept in arrays until the end.
	prices := make([]stagePrice, len(stages))
	scales := make([]float64, len(stages))
	for i, s := range stages {
		prices[i] = stagePriceOf(jb, s)
		scales[i] = scale
		if s == job.StageAnalyze && docs > 0 { // one analysis per document, shared by its passages
			scales[i] *= float64(docs) / float64(unique)
		}
	}
	sums := make([]usageSums, len(stages))
	var total usageSums
	var records, items, judged, valid, measured, empValid, tokens float64
	// The outcomes' scaled counts are summed here and put in out at the
	// end, each only when a problem had that outcome.
	var outcomes [3]struct {
		n   int
		sum float64
	}
	for _, p := range ps {
		o := 2 // failed
		switch p.Outcome {
		case corpus.OutcomeRecord:
			records++
			o = 0
		case corpus.OutcomeLeftOut:
			o = 1
		}
		outcomes[o].n++
		outcomes[o].sum += scale
		items += float64(p.Items)
		judged += float64(p.Judged)
		valid += float64(p.Valid)
		measured += float64(p.Measured)
		empValid += float64(p.EmpiricallyValid)
		for i, s := range stages {
			u := p.Stages[s]
			var cached int64
			if len(p.CachedPrompt) > 0 {
				cached = p.CachedPrompt[s]
			}
			cost := prices[i].cost(u.PromptTokens, cached, u.CompletionTokens)
			sums[i].add(u, cached, cost, scales[i])
			total.add(u, cached, cost, scales[i])
			tokens += float64(u.PromptTokens+u.CompletionTokens) * scales[i]
		}
	}
	for o, name := range [...]string{"records", "left_out", "failed"} {
		if outcomes[o].n > 0 {
			out[name] = outcomes[o].sum
		}
	}
	if len(ps) > 0 && len(stages) > 0 {
		for i, s := range stages {
			sums[i].addTo(out, s)
		}
		total.addTo(out, "total")
		out["total.tokens"] += tokens
	}
	if records > 0 {
		out["items_per_record"] = items / records
	}
	if judged > 0 {
		out["validity"] = valid / judged
	}
	if measured > 0 {
		out["empirical_validity"] = empValid / measured
	}
	return out
}

// usageSums are a stage's (or all stages') scaled requests, tokens and cost.
type usageSums struct{ requests, prompt, cached, completion, cost float64 }

func (a *usageSums) add(u schema.Usage, cached int64, cost, scale float64) {
	a.requests += float64(u.Requests) * scale
	a.prompt += float64(u.PromptTokens) * scale
	a.cached += float64(cached) * scale
	a.completion += float64(u.CompletionTokens) * scale
	a.cost += cost * scale
}

// addTo adds the sums to out under name.requests, name.prompt, ...
func (a *usageSums) addTo(out map[string]float64, name string) {
	out[name+".requests"] += a.requests
	out[name+".prompt"] += a.prompt
	out[name+".cached"] += a.cached
	out[name+".completion"] += a.completion
	out[name+".cost"] += a.cost
}

// The constraints on the wall time.
const (
	ConstraintConcurrency = "concurrency"
	ConstraintRate        = "rate limit"
	ConstraintInFlight    = "problems in flight"
	ConstraintLatency     = "latency"
)

// wallBounds are the wall times each constraint alone sets for m problems:
// the request seconds of an endpoint over its concurrency; its requests
// and tokens over its rate limits; the problems' own latency over the
// problems in flight at once; and the latency of one problem.
func wallBounds(j *job.Job, ps []corpus.PilotProblem, stages []string, m int64, wo planWallOptions) []corpus.WallBound {
	n := float64(len(ps))
	per := float64(m) / n
	var latency float64
	for _, p := range ps {
		latency += p.Seconds
	}
	latency /= n
	out := []corpus.WallBound{{Constraint: ConstraintLatency, Seconds: latency}, {Constraint: ConstraintInFlight, Seconds: latency * float64(m) / float64(max(1, wo.inFlight))}}
	conc, rate := 0.0, 0.0
	for _, e := range wo.endpoints {
		var busy, reqs, toks float64
		for _, p := range ps {
			busy += p.RequestSeconds[e.BaseURL]
			for _, s := range e.Stages {
				u := p.Stages[s]
				reqs += float64(u.Requests)
				toks += float64(u.PromptTokens + u.CompletionTokens)
			}
		}
		conc = max(conc, busy*per/float64(max(1, wo.concurrency)))
		// At the limit's pace throughout: a server's bucket may let the first
		// minute's allowance go at once, but the pilot has just drawn on it,
		// and over a run of hours it is a minute.
		if e.RequestsPerMinute > 0 {
			rate = max(rate, reqs*per/e.RequestsPerMinute*60)
		}
		if e.TokensPerMinute > 0 {
			rate = max(rate, toks*per/e.TokensPerMinute*60)
		}
	}
	out = append(out, corpus.WallBound{Constraint: ConstraintConcurrency, Seconds: conc})
	if rate > 0 {
		out = append(out, corpus.WallBound{Constraint: ConstraintRate, Seconds: rate})
	}
	return out
}

// wallSeconds is the projected wall time of m problems: the tightest
// throughput bound, plus one problem's latency for the pipeline to fill
// and drain.
func wallSeconds(j *job.Job, ps []corpus.PilotProblem, stages []string, m int64, wo planWallOptions) float64 {
	if m == 0 {
		return 0
	}
	var latency, through float64
	for _, b := range wallBounds(j, ps, stages, m, wo) {
		if b.Constraint == ConstraintLatency {
			latency = b.Seconds
		} else {
			through = max(through, b.Seconds)
		}
	}
	return through + latency
}

// wallOf reads the wall figures out of the estimates and names the
// binding constraint: the largest bound, or latency when one problem's own
// latency outweighs every throughput bound.
func wallOf(full map[string]float64, rg func(string) corpus.PlanRange) corpus.WallProjection {
	w := corpus.WallProjection{WholeSeconds: rg("wall.whole"), RestSeconds: rg("wall.rest")}
	for _, c := range []string{ConstraintLatency, ConstraintConcurrency, ConstraintRate, ConstraintInFlight} {
		if v, ok := full["bound."+c]; ok {
			w.Bounds = append(w.Bounds, corpus.WallBound{Constraint: c, Seconds: v})
		}
	}
	best := 0.0
	for _, b := range w.Bounds {
		if b.Seconds > best {
			best, w.Binding = b.Seconds, b.Constraint
		}
	}
	return w
}

// relief says what changing the binding constraint would buy, for the rest.
func relief(jb *job.Job, ps []corpus.PilotProblem, stages []string, rest int64, wo planWallOptions, w corpus.WallProjection) string {
	now := wallSeconds(jb, ps, stages, rest, wo)
	switch w.Binding {
	case ConstraintConcurrency:
		alt := wo
		alt.concurrency = 2 * wo.concurrency
		j := *jb
		j.Limits.Concurrency = alt.concurrency
		alt.inFlight = pipeline.ProblemsInFlight(&j)
		return fmt.Sprintf("concurrency %d would take it from %s to %s (if the endpoint keeps its latency under twice the load)", alt.concurrency, figures.Hours(now), figures.Hours(wallSeconds(jb, ps, stages, rest, alt)))
	case ConstraintRate:
		alt := wo
		alt.endpoints = slices.Clone(wo.endpoints)
		for i := range alt.endpoints {
			alt.endpoints[i].RequestsPerMinute *= 2
			alt.endpoints[i].TokensPerMinute *= 2
		}
		return fmt.Sprintf("twice the endpoint's rate limit would take it from %s to %s; more concurrency buys nothing", figures.Hours(now), figures.Hours(wallSeconds(jb, ps, stages, rest, alt)))
	case ConstraintInFlight:
		alt := wo
		alt.inFlight = 2 * wo.inFlight
		return fmt.Sprintf("problems_in_flight %d would take it from %s to %s", alt.inFlight, figures.Hours(now), figures.Hours(wallSeconds(jb, ps, stages, rest, alt)))
	case ConstraintLatency:
		alt := wo
		alt.concurrency = 2 * wo.concurrency
		alt.inFlight = 2 * wo.inFlight
		return fmt.Sprintf("one %s's chain of requests sets it: concurrency %d would take it only from %s to %s; a faster endpoint or a lower max_tokens would do more", job.UnitWordsOf(jb.Style).Unit, alt.concurrency, figures.Hours(now), figures.Hours(wallSeconds(jb, ps, stages, rest, alt)))
	}
	return ""
}

// planEndpoints are the job's endpoints with their limits: the job's
// configured rates, or those the server announced during the pilot (or,
// when this plan sent nothing, during the earlier plan's pilot).
func planEndpoints(j *job.Job, decompose bool, rep *pipeline.Report, earlier *corpus.PlanDoc) []corpus.PlanEndpoint {
	var out []corpus.PlanEndpoint
	for _, se := range requestStages(j, decompose) {
		stage, url := se.stage, se.endpoint.BaseURL
		i := slices.IndexFunc(out, func(e corpus.PlanEndpoint) bool { return e.BaseURL == url })
		if i >= 0 {
			if !slices.Contains(out[i].Stages, stage) {
				out[i].Stages = append(out[i].Stages, stage)
			}
			continue
		}
		e := corpus.PlanEndpoint{BaseURL: url, Stages: []string{stage}, Concurrency: j.Limits.Concurrency,
			RequestsPerMinute: j.Limits.RequestsPerMinute, TokensPerMinute: j.Limits.TokensPerMinute}
		if e.RequestsPerMinute > 0 || e.TokensPerMinute > 0 {
			e.LimitSource = "configured"
		}
		for _, h := range rep.Endpoints {
			if h.BaseURL != url {
				continue
			}
			if r := h.Health.Requests; r != nil && (e.RequestsPerMinute == 0 || r.PerMinute < e.RequestsPerMinute) {
				e.RequestsPerMinute, e.LimitSource = r.PerMinute, "announced"
			}
			if t := h.Health.Tokens; t != nil && (e.TokensPerMinute == 0 || t.PerMinute < e.TokensPerMinute) {
				e.TokensPerMinute, e.LimitSource = t.PerMinute, "announced"
			}
		}
		if earlier != nil && e.LimitSource == "" {
			for _, old := range earlier.Endpoints {
				if old.BaseURL == url && old.LimitSource == "announced" {
					e.RequestsPerMinute, e.TokensPerMinute, e.LimitSource = old.RequestsPerMinute, old.TokensPerMinute, old.LimitSource
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// stagePrice is the price of a stage's model and the stage's batch rate:
// what a stage's tokens cost.
type stagePrice struct {
	priced bool
	price  job.Price
	rate   float64
}

func stagePriceOf(j *job.Job, stage string) stagePrice {
	p, ok := j.Prices[stageEndpoint(j, stage).Model]
	if !ok {
		return stagePrice{}
	}
	return stagePrice{priced: true, price: p, rate: batchRateOf(j, stage)}
}

// cost prices tokens, the cached prompt tokens at the cached rate (the
// prompt rate when the model has none); nothing when the model has no price.
func (sp stagePrice) cost(prompt, cached, completion int64) float64 {
	if !sp.priced {
		return 0
	}
	p := sp.price
	cachedRate := p.CachedPrompt
	if cachedRate == 0 {
		cachedRate = p.Prompt
	}
	cached = min(max(cached, 0), prompt)
	return sp.rate * (float64(prompt-cached)*p.Prompt + float64(cached)*cachedRate + float64(completion)*p.Completion) / 1e6
}

// budgetChecks compares the projected cost and tokens with the job's budget.
func budgetChecks(j *job.Job, plan *corpus.PlanDoc) []corpus.BudgetCheck {
	var out []corpus.BudgetCheck
	covers := func(limit float64, projected corpus.PlanRange) float64 {
		if projected.Value <= limit {
			return 1
		}
		return limit / projected.Value
	}
	if b := j.Budget.MaxCostUSD; b > 0 && plan.CostCounted {
		projected := plan.Total.CostUSD
		if len(plan.BatchStages) > 0 && plan.WithSpent != nil {
			projected = *plan.WithSpent // the pilot paid online, the rest in batches
		}
		out = append(out, corpus.BudgetCheck{Limit: "max_cost_usd", Value: b, Projected: projected, Covers: covers(b, projected)})
	}
	if b := float64(j.Budget.MaxTokens); b > 0 {
		out = append(out, corpus.BudgetCheck{Limit: "max_tokens", Value: b, Projected: plan.Tokens, Covers: covers(b, plan.Tokens)})
	}
	return out
}
