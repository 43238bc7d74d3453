package audit

import (
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/rubricforge/rubricforge/schema"
)

// report turns the merged accumulator into the Report.
func (a *acc) report(in *Input, set *settings) *Report {
	r := &Report{
		SpecVersion:   schema.SpecVersion,
		Corpus:        a.corpusInfo(in),
		InputProblems: []Problem{},
		Structure:     a.structure(set),
		Validity:      addr(a.validityReport()),
		Counts:        a.counts(),
		PitfallBonus:  a.coOccurrence(),
		Unavailable:   []Unavailable{},
		Grounded:      a.groundedReport(),
		RunInput:      in.RunInput,
	}
	if in.Format == FormatVerl {
		why := "a verl export's label column holds the rubric only; audit the run directory it came from"
		if in.Export != nil && in.Export.Source != "" {
			why += " (" + in.Export.Source + ")"
		}
		for _, s := range []string{"pass_rates", "rollouts", "usage", "provenance", "empirical.satisfaction_by_correctness", "discrimination", "structure: rollout and satisfaction rules"} {
			r.Unavailable = append(r.Unavailable, Unavailable{s, why})
		}
		r.Empirical = a.empirical(false)
		r.leaveOutTheOtherKind()
		return r
	}
	r.PassRates = a.passRates()
	r.Rollouts = a.rollouts()
	u := a.usage
	u.CostUSD = float64(a.costNano) / 1e9
	if u.Records > 0 {
		u.CostPerRecordUSD = addr(u.CostUSD / float64(u.Records))
		u.TokensPerRecord = addr(float64(u.PromptTokens+u.CompletionTokens) / float64(u.Records))
	}
	if t := in.RunTotals; t != nil {
		u.RunRequests, u.RunCacheReads = &t.Requests, &t.CacheReads
	}
	r.Usage = &u
	r.Provenance = a.provenance()
	r.Empirical = a.empirical(true)
	r.Discrimination = a.disc.report()
	r.Discrimination.Refined = in.Refined
	r.Discrimination.JudgeErrorFrom = set.judgeErrorFrom
	r.leaveOutTheOtherKind()
	return r
}

// Rubric kinds of a corpus (CorpusInfo.RubricKind).
const (
	RubricMath     = "math"
	RubricGrounded = "grounded"
	RubricBoth     = "both"
)

// rubricKind says what the corpus's records hold, from their styles.
func rubricKind(styles []Count) string {
	var grounded, other bool
	for _, s := range styles {
		if s.Value == schema.StyleGrounded {
			grounded = true
		} else {
			other = true
		}
	}
	switch {
	case grounded && other:
		return RubricBoth
	case grounded:
		return RubricGrounded
	}
	return RubricMath
}

// leaveOutTheOtherKind sets the corpus's kind and, for a grounded corpus,
// leaves out the sections of rubric items (they would all say 0): null in
// JSON and named in Unavailable.
func (r *Report) leaveOutTheOtherKind() {
	r.Corpus.RubricKind = rubricKind(r.Corpus.Styles)
	if r.Corpus.RubricKind != RubricGrounded {
		return
	}
	r.Validity, r.Counts, r.PitfallBonus, r.PassRates, r.Rollouts, r.Empirical, r.Discrimination = nil, nil, nil, nil, nil, nil, nil
	const why = "the math styles' section; a grounded corpus's questions, criteria and their validity are in grounded"
	for _, s := range []string{"validity", "counts", "pitfall_bonus", "pass_rates", "rollouts", "empirical", "discrimination", "reliability"} {
		if !slices.ContainsFunc(r.Unavailable, func(u Unavailable) bool { return u.Section == s }) {
			r.Unavailable = append(r.Unavailable, Unavailable{s, why})
		}
	}
}

func (a *acc) corpusInfo(in *Input) CorpusInfo {
	c := CorpusInfo{
		Paths: in.Paths, Kind: in.Kind, Format: in.Format, Files: len(in.Files), Records: a.records, Items: a.items,
		Styles: a.styles.counts(), Splits: a.splits.counts(), SpecVersions: a.specs.counts(),
		JobFingerprints: a.fingerprints.counts(),
	}
	if in.Kind == KindRun {
		c.ManifestFingerprint = &in.ManifestFingerprint
	}
	if ex := in.Export; ex != nil {
		c.ExportFormat, c.ExportSource = &ex.Format, &ex.Source
		c.ValidOnly = &ex.ValidOnly
		c.ExportFingerprints = ex.JobFingerprints
		if c.ExportFingerprints == nil {
			c.ExportFingerprints = []string{}
		}
	}
	return c
}

func (a *acc) structure(set *settings) Structure {
	s := Structure{
		MaxItems: set.maxItems, RecordsChecked: a.records, RecordsWithViolations: a.viol.records,
		Violations: a.viol.total, ByRule: []RuleCount{}, Listed: a.viol.listed,
	}
	if s.Listed == nil {
		s.Listed = []Violation{}
	}
	for _, rule := range Rules {
		if c := a.viol.byRule[rule]; c != nil {
			s.ByRule = append(s.ByRule, *c)
		}
	}
	return s
}

func (a *acc) validityReport() Validity {
	v := Validity{ByType: []TypeValidity{}, Overall: TypeValidity{Type: "Overall"}}
	o := &v.Overall
	for _, t := range typeOrder(slices.Collect(maps.Keys(a.validity))) {
		tv := *a.validity[t]
		tv.Rate = ratio(tv.Valid, tv.Valid+tv.Invalid)
		v.ByType = append(v.ByType, tv)
		o.Total, o.Valid, o.Invalid, o.Unjudged = o.Total+tv.Total, o.Valid+tv.Valid, o.Invalid+tv.Invalid, o.Unjudged+tv.Unjudged
	}
	o.Rate = ratio(o.Valid, o.Valid+o.Invalid)
	return v
}

func (a *acc) counts() []StyleCounts {
	out := []StyleCounts{}
	for _, st := range slices.Sorted(maps.Keys(a.byStyle)) {
		s := a.byStyle[st]
		sc := StyleCounts{Style: st, Records: s.records, ByType: []TypeCount{}, ItemsPerRecord: s.perRecord.bins(), Weights: []Weight{}}
		for _, t := range s.types {
			if t == typeOther && s.typeItems[t] == 0 {
				continue
			}
			sc.ByType = append(sc.ByType, TypeCount{Type: t, Summary: s.perType[t].summary(), Share: ratio(s.typeItems[t], s.items)})
		}
		sc.Total = TypeCount{Type: "Total", Summary: s.perRecord.summary(), Share: ratio(s.items, s.items)}
		sc.WordsPerItem = ratio(s.words, s.items)
		for _, w := range slices.Sorted(maps.Keys(s.weights)) {
			sc.Weights = append(sc.Weights, Weight{w, s.weights[w]})
		}
		out = append(out, sc)
	}
	return out
}

func (a *acc) coOccurrence() *CoOccurrence {
	if len(a.cooc) == 0 {
		return nil
	}
	maxP, maxB := 0, 0
	var records int64
	for k, n := range a.cooc {
		maxP, maxB = max(maxP, k[0]), max(maxB, k[1])
		records += n
	}
	c := &CoOccurrence{Records: records, PitfallTotals: make([]int64, maxP+1), BonusTotals: make([]int64, maxB+1)}
	for p := 0; p <= maxP; p++ {
		c.Pitfall = append(c.Pitfall, p)
		rowCounts := make([]int64, maxB+1)
		for b := 0; b <= maxB; b++ {
			n := a.cooc[[2]int{p, b}]
			rowCounts[b] = n
			c.PitfallTotals[p] += n
			c.BonusTotals[b] += n
		}
		c.Matrix = append(c.Matrix, rowCounts)
	}
	for b := 0; b <= maxB; b++ {
		c.Bonus = append(c.Bonus, b)
	}
	return c
}

func (a *acc) passRates() *PassRates {
	p := &a.pass
	pr := &PassRates{Records: p.records, WithoutRollouts: p.without, AllWrong: p.allWrong, AllCorrect: p.allCorrect,
		Histogram: make([]Range, 10)}
	for i := range pr.Histogram {
		pr.Histogram[i] = Range{Lo: float64(i) / 10, Hi: float64(i+1) / 10, Count: p.bins[i]}
	}
	if p.records > 0 {
		slices.Sort(p.rates) // summed in sorted order, the mean does not depend on file order
		var sum float64
		for _, x := range p.rates {
			sum += x
		}
		pr.Mean = addr(sum / float64(p.records))
		pr.Median = addr(median(p.rates))
		rp := p.perRecord.summary()
		pr.RolloutsPerRecord = &rp
	}
	return pr
}

// tokenBins is how many bars the rollout length histogram has at most.
const tokenBins = 20

func (a *acc) rollouts() *Rollouts {
	ra := &a.roll
	ro := &Rollouts{Total: ra.total, Correct: ra.correct, FormatOK: ra.formatOK, CutOff: ra.cutOff}
	if len(ra.tokens) == 0 && ra.unknown == 0 {
		return ro
	}
	t := &Tokens{Known: int64(len(ra.tokens)), Unknown: ra.unknown, Histogram: []Range{}}
	ro.Tokens = t
	if len(ra.tokens) == 0 {
		return ro
	}
	slices.Sort(ra.tokens)
	t.Mean = addr(float64(ra.sumCorrect+ra.sumIncorrect) / float64(len(ra.tokens)))
	t.Median = addr(median(ra.tokens))
	maxTokens := ra.tokens[len(ra.tokens)-1]
	t.P90, t.P99, t.Max = addr(quantile(ra.tokens, 0.9)), addr(quantile(ra.tokens, 0.99)), &maxTokens
	if ra.nCorrect > 0 {
		m := float64(ra.sumCorrect) / float64(ra.nCorrect)
		t.MeanCorrect = &m
	}
	if ra.nIncorrect > 0 {
		m := float64(ra.sumIncorrect) / float64(ra.nIncorrect)
		t.MeanIncorrect = &m
	}
	step := niceStep(float64(maxTokens)+1, tokenBins)
	bins := int(math.Floor(float64(maxTokens)/step)) + 1
	counts := make([]int64, bins)
	for _, x := range ra.tokens {
		counts[min(bins-1, int(float64(x)/step))]++
	}
	for i, n := range counts {
		t.Histogram = append(t.Histogram, Range{Lo: float64(i) * step, Hi: float64(i+1) * step, Count: n})
	}
	return ro
}

func (a *acc) provenance() *Provenance {
	p := &a.prov
	out := &Provenance{
		RolloutModels: p.rollout.counts(), DistillModels: p.distill.counts(), JudgeModels: p.judge.counts(),
		EmpiricalModels: p.empirical.counts(), Alphas: p.alphas.counts(), ToolVersions: p.tools.counts(),
	}
	if !p.first.IsZero() {
		out.CreatedFirst, out.CreatedLast = &p.first, &p.last
	}
	return out
}

// empirical reports the stored empirical figures; withVerdicts adds what
// the per-rollout verdicts give. It is nil when no item was measured and no
// rollout carries verdicts.
func (a *acc) empirical(withVerdicts bool) *Empirical {
	e := &a.emp
	var measured int64
	for _, t := range e.byType {
		measured += t.Measured
	}
	if measured == 0 && len(e.sat) == 0 {
		return nil
	}
	out := &Empirical{ByType: []TypeEmpirical{}, Overall: TypeEmpirical{Type: "Overall"}, RecordsRecomputed: e.recomputed}
	o := &out.Overall
	for _, ty := range typeOrder(slices.Collect(maps.Keys(e.byType))) {
		t := *e.byType[ty]
		t.fillShares()
		out.ByType = append(out.ByType, t)
		o.Items += t.Items
		o.Measured += t.Measured
		o.Discriminating += t.Discriminating
		o.Correlated += t.Correlated
		o.Valid += t.Valid
		o.Undecided += t.Undecided
	}
	o.fillShares()
	if withVerdicts && len(e.sat) > 0 {
		out.SatisfactionByCorrectness = []TypeSatisfaction{}
		for _, ty := range typeOrder(slices.Collect(maps.Keys(e.sat))) {
			out.SatisfactionByCorrectness = append(out.SatisfactionByCorrectness, satisfactionOf(ty, *e.sat[ty]))
		}
	}
	if e.judgeVsEmp.n() > 0 {
		out.JudgeVsEmpirical = agreementOf("LLM judge", "RLCER rule", e.judgeVsEmp, e.judgeByTyp)
	}
	return out
}

func (t *TypeEmpirical) fillShares() {
	t.DiscriminatingShare = ratio(t.Discriminating, t.Measured)
	t.CorrelatedShare = ratio(t.Correlated, t.Measured)
	t.ValidShare = ratio(t.Valid, t.Measured)
}

// satisfactionOf is one row of Table 7 from the [correct][satisfied]
// counts c: satisfaction rates of correct and incorrect rollouts, their
// difference in percentage points, and the point-biserial correlation,
// which for two binary variables is the phi coefficient.
func satisfactionOf(ty string, c confusion) TypeSatisfaction {
	ts := TypeSatisfaction{Type: ty, Pairs: c.n(), Correct: ratio(c[0][0], c[0][0]+c[0][1]), Incorrect: ratio(c[1][0], c[1][0]+c[1][1])}
	if ts.Correct != nil && ts.Incorrect != nil {
		d := 100 * (*ts.Correct - *ts.Incorrect)
		ts.DiffPP = &d
	}
	n11, n10, n01, n00 := float64(c[0][0]), float64(c[0][1]), float64(c[1][0]), float64(c[1][1])
	den := (n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)
	if den > 0 {
		phi := (n11*n00 - n10*n01) / math.Sqrt(den)
		ts.PointBiserial = &phi
	}
	return ts
}

// addr is a pointer to a copy of v: a figure that was computed.
func addr[T any](v T) *T { return &v }

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
