package audit

import (
	"math"
	"time"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// acc accumulates every figure over the rows of one file; accumulators of
// several files merge in file order.
type acc struct {
	set     *settings
	fileIdx int
	file    string

	records, items int64
	ids            []string // in row order; duplicates are found when merging
	idRows         []int64  // the row (from 1, bad lines counted) of each id

	styles, splits, specs, fingerprints counter
	prov                                provAcc
	validity                            map[string]*TypeValidity
	byStyle                             map[string]*styleAcc
	cooc                                map[[2]int]int64
	pass                                passAcc
	roll                                rollAcc
	usage                               Usage
	costNano                            int64 // the usage cost in 1e-9 USD: sums that do not depend on order
	emp                                 empAcc
	disc                                discAcc
	viol                                violAcc
	grounded                            *groundedAcc // nil until a grounded record
}

// settings are what every accumulator of one audit shares.
type settings struct {
	maxItems int
	list     int // violations to keep; < 0 all
	discrim  discrim.Options
	// judgeErrorFrom says where discrim.JudgeError came from.
	judgeErrorFrom string
}

func newAcc(set *settings, fileIdx int, file string) *acc {
	return &acc{
		set: set, fileIdx: fileIdx, file: file,
		styles: counter{}, splits: counter{}, specs: counter{}, fingerprints: counter{},
		prov:     newProvAcc(),
		validity: map[string]*TypeValidity{},
		byStyle:  map[string]*styleAcc{},
		cooc:     map[[2]int]int64{},
		pass:     passAcc{perRecord: hist{}},
		emp:      newEmpAcc(),
		disc:     newDiscAcc(set.discrim),
		viol:     violAcc{byRule: map[string]*RuleCount{}},
	}
}

// add takes one record, the row-th (from 1) of the file.
func (a *acc) add(r *row, rowNum int64) {
	a.records++
	a.items += int64(len(r.Rubric))
	a.ids = append(a.ids, r.ID)
	a.idRows = append(a.idRows, rowNum)
	a.styles[r.Style]++
	if r.Split != "" {
		a.splits[r.Split]++
	}
	a.specs[r.Provenance.SpecVersion]++
	if fp := r.Provenance.JobFingerprint; fp != "" {
		a.fingerprints[fp]++
	}
	a.prov.add(&r.Provenance)
	if r.Style == schema.StyleGrounded || r.Grounded != nil {
		a.addGroundedRecord(r, rowNum)
		return
	}
	a.addValidity(r)
	a.styleAcc(r.Style).add(r)
	a.addCoOccurrence(r)
	a.pass.add(r)
	a.roll.add(r)
	a.addUsage(&r.Usage)
	a.viol.beginRecord()
	a.check(r, rowNum)
	a.emp.add(a, r, rowNum)
	a.disc.add(r)
	a.viol.endRecord(rowNum)
}

func (a *acc) addValidity(r *row) {
	for i := range r.Rubric {
		it := &r.Rubric[i]
		v := a.validity[it.Type]
		if v == nil {
			v = &TypeValidity{Type: it.Type}
			a.validity[it.Type] = v
		}
		v.Total++
		switch {
		case it.Valid == nil:
			v.Unjudged++
		case *it.Valid:
			v.Valid++
		default:
			v.Invalid++
		}
	}
}

func (a *acc) addCoOccurrence(r *row) {
	if r.Style != schema.StyleSRaR {
		return
	}
	var p, b int
	for i := range r.Rubric {
		switch r.Rubric[i].Type {
		case schema.TypePitfall:
			p++
		case schema.TypeBonus:
			b++
		}
	}
	a.cooc[[2]int{p, b}]++
}

func (a *acc) addUsage(u *schema.Usage) {
	a.usage.Records++
	a.usage.Requests += u.Requests
	a.usage.CachedRequests += u.CachedRequests
	a.usage.PromptTokens += u.PromptTokens
	a.usage.CompletionTokens += u.CompletionTokens
	a.costNano += int64(math.Round(u.CostUSD * 1e9))
}

func (a *acc) styleAcc(style string) *styleAcc {
	s := a.byStyle[style]
	if s == nil {
		s = newStyleAcc(style)
		a.byStyle[style] = s
	}
	return s
}

// merge adds o, the accumulator of a later file.
func (a *acc) merge(o *acc) {
	a.records += o.records
	a.items += o.items
	a.styles.merge(o.styles)
	a.splits.merge(o.splits)
	a.specs.merge(o.specs)
	a.fingerprints.merge(o.fingerprints)
	a.prov.merge(&o.prov)
	for t, v := range o.validity {
		w := a.validity[t]
		if w == nil {
			w = &TypeValidity{Type: t}
			a.validity[t] = w
		}
		w.Total, w.Valid, w.Invalid, w.Unjudged = w.Total+v.Total, w.Valid+v.Valid, w.Invalid+v.Invalid, w.Unjudged+v.Unjudged
	}
	for st, s := range o.byStyle {
		a.styleAcc(st).merge(s)
	}
	for k, n := range o.cooc {
		a.cooc[k] += n
	}
	a.pass.merge(&o.pass)
	a.roll.merge(&o.roll)
	u := o.usage
	a.usage.Records += u.Records
	a.usage.Requests += u.Requests
	a.usage.CachedRequests += u.CachedRequests
	a.usage.PromptTokens += u.PromptTokens
	a.usage.CompletionTokens += u.CompletionTokens
	a.costNano += o.costNano
	a.emp.merge(&o.emp)
	a.disc.merge(&o.disc)
	a.viol.merge(&o.viol, a.set.list)
	a.mergeGrounded(o)
}

// styleAcc counts the items of the records of one style.
type styleAcc struct {
	types     []string        // the style's item types, in table order
	records   int64           //
	perType   map[string]hist // items of a type per record, zeros included; "OTHER" for types the style does not allow
	perRecord hist            // items per record
	typeItems map[string]int64
	items     int64
	words     int64
	weights   map[float64]int64
}

// typeOther collects, in the count tables, item types the style does not allow.
const typeOther = "OTHER"

func newStyleAcc(style string) *styleAcc {
	var types []string
	switch style {
	case schema.StyleSRaR:
		types = []string{schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer}
	case schema.StyleFactualProcess:
		types = []string{schema.TypeFactual, schema.TypeProcess}
	}
	s := &styleAcc{types: append(types, typeOther), perType: map[string]hist{}, perRecord: hist{}, typeItems: map[string]int64{}, weights: map[float64]int64{}}
	for _, t := range s.types {
		s.perType[t] = hist{}
	}
	return s
}

func (s *styleAcc) add(r *row) {
	s.records++
	s.perRecord.add(len(r.Rubric))
	n := make(map[string]int, len(s.types))
	for i := range r.Rubric {
		it := &r.Rubric[i]
		t := it.Type
		if _, ok := s.perType[t]; !ok || t == typeOther {
			t = typeOther
		}
		n[t]++
		s.typeItems[t]++
		s.items++
		s.words += int64(countWords(it.Text))
		if !math.IsNaN(it.Weight) {
			s.weights[it.Weight]++
		}
	}
	for _, t := range s.types {
		s.perType[t].add(n[t])
	}
}

func (s *styleAcc) merge(o *styleAcc) {
	s.records += o.records
	s.perRecord.merge(o.perRecord)
	for t, h := range o.perType {
		s.perType[t].merge(h)
	}
	for t, n := range o.typeItems {
		s.typeItems[t] += n
	}
	s.items += o.items
	s.words += o.words
	for w, n := range o.weights {
		s.weights[w] += n
	}
}

// countWords counts runs of non-space characters without allocating.
func countWords(s string) int {
	n, in := 0, false
	for _, c := range s {
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x85 || c == 0xA0 || c == 0x3000
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// passAcc collects pass rates of records with rollouts.
type passAcc struct {
	records, without     int64
	rates                []float64
	bins                 [10]int64
	allWrong, allCorrect int64
	perRecord            hist // rollouts per record
}

func (p *passAcc) add(r *row) {
	if len(r.Rollouts) == 0 {
		p.without++
		return
	}
	p.records++
	p.perRecord.add(len(r.Rollouts))
	x := r.PassRate
	p.rates = append(p.rates, x)
	p.bins[min(9, max(0, int(math.Floor(x*10+1e-9))))]++
	switch x {
	case 0:
		p.allWrong++
	case 1:
		p.allCorrect++
	}
}

func (p *passAcc) merge(o *passAcc) {
	p.records += o.records
	p.without += o.without
	p.rates = append(p.rates, o.rates...)
	for i := range p.bins {
		p.bins[i] += o.bins[i]
	}
	p.allWrong += o.allWrong
	p.allCorrect += o.allCorrect
	p.perRecord.merge(o.perRecord)
}

// rollAcc collects the rollouts' outcomes and lengths.
type rollAcc struct {
	total, correct, formatOK, cutOff int64
	tokens                           []int32
	unknown                          int64
	sumCorrect, sumIncorrect         int64
	nCorrect, nIncorrect             int64
}

func (a *rollAcc) add(r *row) {
	for i := range r.Rollouts {
		ro := &r.Rollouts[i]
		a.total++
		if ro.Correct {
			a.correct++
		}
		if ro.FormatOK {
			a.formatOK++
		}
		if ro.FinishReason == "length" {
			a.cutOff++
		}
		if ro.CompletionTokens == nil {
			a.unknown++
			continue
		}
		t := *ro.CompletionTokens
		a.tokens = append(a.tokens, t)
		if ro.Correct {
			a.sumCorrect += int64(t)
			a.nCorrect++
		} else {
			a.sumIncorrect += int64(t)
			a.nIncorrect++
		}
	}
}

func (a *rollAcc) merge(o *rollAcc) {
	a.total += o.total
	a.correct += o.correct
	a.formatOK += o.formatOK
	a.cutOff += o.cutOff
	a.tokens = append(a.tokens, o.tokens...)
	a.unknown += o.unknown
	a.sumCorrect += o.sumCorrect
	a.sumIncorrect += o.sumIncorrect
	a.nCorrect += o.nCorrect
	a.nIncorrect += o.nIncorrect
}

// provAcc counts records by provenance.
type provAcc struct {
	rollout, distill, judge, empirical, alphas, tools counter
	first, last                                       time.Time
}

func newProvAcc() provAcc {
	return provAcc{rollout: counter{}, distill: counter{}, judge: counter{}, empirical: counter{}, alphas: counter{}, tools: counter{}}
}

const none = "(none)"

func orNone(s *string) string {
	if s == nil {
		return none
	}
	return *s
}

func (p *provAcc) add(pr *provenance) {
	p.rollout[pr.RolloutModel]++
	p.distill[pr.DistillModel]++
	p.judge[orNone(pr.JudgeModel)]++
	p.empirical[orNone(pr.EmpiricalModel)]++
	alpha := none
	if pr.Alpha != nil {
		alpha = formatFloat(*pr.Alpha)
	}
	p.alphas[alpha]++
	p.tools[pr.ToolVersion]++
	p.span(pr.CreatedAt, pr.CreatedAt)
}

func (p *provAcc) span(first, last time.Time) {
	if first.IsZero() {
		return
	}
	if p.first.IsZero() || first.Before(p.first) {
		p.first = first
	}
	if last.After(p.last) {
		p.last = last
	}
}

func (p *provAcc) merge(o *provAcc) {
	p.rollout.merge(o.rollout)
	p.distill.merge(o.distill)
	p.judge.merge(o.judge)
	p.empirical.merge(o.empirical)
	p.alphas.merge(o.alphas)
	p.tools.merge(o.tools)
	p.span(o.first, o.last)
}
