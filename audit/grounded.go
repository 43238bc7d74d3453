package audit

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/schema"
)

// Structural rules of grounded records (style grounded, seed 001).
const (
	RuleGroundedPayload = "grounded_payload" // style grounded without the payload, or the payload on a math record
	RuleNoPassage       = "no_passage"       // blank passage
	RuleNoQuestions     = "no_questions"     // a passage record without questions
	RuleNoQuestion      = "no_question"      // a blank question
	RuleNoCriteria      = "no_criteria"      // a question without criteria
	RuleCriterionID     = "criterion_id"     // a blank or repeated criterion id
	RuleCriterionWeight = "criterion_weight" // a negative or non-finite weight, one outside the template's 1-5 scale, or a total weight not above 0
	RuleCriterionText   = "criterion_text"   // a criterion without name or description
)

// GroundedRules are the grounded rules in report order; Rules ends with them.
var GroundedRules = []string{RuleGroundedPayload, RuleNoPassage, RuleNoQuestions, RuleNoQuestion, RuleNoCriteria,
	RuleCriterionID, RuleCriterionWeight, RuleCriterionText}

// CopyWords is the run of consecutive passage words a question must not
// repeat: a question sharing CopyWords or more words in a row with its
// passage counts as copying it.
const CopyWords = 10

// Grounded is what `validate` reports about the grounded records: the shape
// of their questions and weighted criteria, how complete the criteria are,
// how long questions and passages are, how much a question repeats its
// passage, the validity verdicts on the criteria and the analyses' genres,
// depths and reasoning modes. Null when the corpus has no grounded record.
type Grounded struct {
	Records             int64    `json:"records"` // passages (a verl export: questions)
	Questions           int64    `json:"questions"`
	QuestionsPerRecord  []Bin    `json:"questions_per_record"`
	Criteria            int64    `json:"criteria"`
	CriteriaPerQuestion *Summary `json:"criteria_per_question"` // the summaries over questions are null without questions
	CriteriaHistogram   []Bin    `json:"criteria_histogram"`    // records = questions with that many criteria
	Weights             []Weight `json:"weights"`               // items = criteria with that weight
	// TotalWeight is the distribution of W (the sum of a question's
	// weights) over questions, rounded to integers.
	TotalWeight *Summary `json:"total_weight"`
	// Completeness is, per criterion field, how many criteria fill it.
	Completeness []FieldFill `json:"completeness"`
	// QuestionChars and PassageChars are lengths in characters.
	QuestionChars *Summary `json:"question_chars"`
	PassageChars  *Summary `json:"passage_chars"`
	// Overlap is the longest run of consecutive words a question shares
	// with its passage (case and punctuation aside); Copying counts the
	// questions with a run of CopyWords or more.
	Overlap     *Summary `json:"overlap_words"`
	CopyWords   int      `json:"copy_words"` // the run that counts as copying, CopyWords
	Copying     int64    `json:"copying_questions"`
	CopyingRate *float64 `json:"copying_rate"` // null without questions
	// Validity counts the validity judge's verdicts on the criteria,
	// overall and by the criterion's position in its question (Type is
	// "criterion 1", ...).
	Validity   TypeValidity   `json:"validity"`
	ByPosition []TypeValidity `json:"validity_by_position"`
	// Measured criteria carry the empirical stage's figures; Constant ones
	// score the same on every closed-book answer (no training signal).
	Measured int64 `json:"empirical_measured"`
	Constant int64 `json:"empirical_constant"`
	// NoSignalShare is Constant over Measured: the share of measured
	// criteria every closed-book answer scored alike, which give a policy
	// no training signal; null when none was measured.
	NoSignalShare *float64 `json:"no_signal_share"`
	// OpenBookEdge is the criteria's open/closed-book edge; absent when no
	// passage has open-book answers (a run without empirical.open_book).
	OpenBookEdge   *OpenBookEdge `json:"open_book_edge,omitempty"`
	Genres         []Count       `json:"genres"`
	Depths         []Count       `json:"depths"`
	ReasoningModes []Count       `json:"reasoning_modes"`
}

// FieldFill is how many criteria fill one field.
type FieldFill struct {
	Field   string   `json:"field"`
	Present int64    `json:"present"`
	Total   int64    `json:"total"`
	Share   *float64 `json:"share"` // null without criteria
}

// criterionFields are the criterion fields Completeness checks, in order.
var criterionFields = []string{"id", "name", "description", "required_elements", "scoring_guide",
	"verification_method", "expected_keywords", "expected_concepts"}

func criterionFilled(c *schema.Criterion) []bool {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	some := func(xs []string) bool {
		for _, x := range xs {
			if !blank(x) {
				return true
			}
		}
		return false
	}
	return []bool{!blank(c.ID), !blank(c.Name), !blank(c.Description), some(c.RequiredElements), !blank(c.ScoringGuide),
		!blank(c.VerificationMethod), some(c.ExpectedKeywords), some(c.ExpectedConcepts)}
}

// groundedAcc accumulates the grounded figures of one file.
type groundedAcc struct {
	records, questions, criteria, copying, measured, constant int64
	perRecord, perQuestion, totalWeight                       hist
	questionChars, passageChars, overlap                      hist
	weights                                                   map[float64]int64
	filled                                                    []int64 // per criterionFields
	validity                                                  TypeValidity
	byPosition                                                map[int]*TypeValidity
	genres, depths, modes                                     counter
	edge                                                      *edgeAcc
}

func newGroundedAcc() *groundedAcc {
	return &groundedAcc{perRecord: hist{}, perQuestion: hist{}, totalWeight: hist{}, questionChars: hist{}, passageChars: hist{},
		overlap: hist{}, weights: map[float64]int64{}, filled: make([]int64, len(criterionFields)),
		byPosition: map[int]*TypeValidity{}, genres: counter{}, depths: counter{}, modes: counter{}, edge: newEdgeAcc()}
}

// addGroundedRecord takes a grounded record in place of add's math figures:
// its usage, its structural rules and the grounded figures.
func (a *acc) addGroundedRecord(r *row, rowNum int64) {
	a.addUsage(&r.Usage)
	a.viol.beginRecord()
	if v := r.Provenance.SpecVersion; !schema.ReadableSpec(v) {
		a.violate(r, rowNum, nil, RuleSpecVersion, "spec version %q; this tool reads %s", v, readableSpecs)
	}
	a.checkGrounded(r, rowNum)
	a.viol.endRecord(rowNum)
	if a.grounded == nil {
		a.grounded = newGroundedAcc()
	}
	if r.Grounded != nil {
		a.grounded.add(r.Grounded)
	}
}

func (g *groundedAcc) add(p *schema.Grounded) {
	g.records++
	g.perRecord.add(len(p.Questions))
	g.passageChars.add(utf8.RuneCountInString(p.Passage))
	g.genres[blankAsNone(p.Analysis.Genre)]++
	g.depths[blankAsNone(p.Analysis.Depth)]++
	g.modes[blankAsNone(p.Analysis.ReasoningMode)]++
	g.edge.add(p)
	passage := newWordIndex(p.Passage)
	for k := range p.Questions {
		q := &p.Questions[k]
		g.questions++
		g.perQuestion.add(len(q.Criteria))
		g.totalWeight.add(int(math.Round(schema.TotalWeight(q.Criteria))))
		g.questionChars.add(utf8.RuneCountInString(q.Question))
		run := passage.longestRun(q.Question)
		g.overlap.add(run)
		if run >= CopyWords {
			g.copying++
		}
		for i := range q.Criteria {
			g.addCriterion(&q.Criteria[i], i+1)
		}
	}
}

func (g *groundedAcc) addCriterion(c *schema.Criterion, position int) {
	g.criteria++
	g.weights[c.Weight]++
	for f, ok := range criterionFilled(c) {
		if ok {
			g.filled[f]++
		}
	}
	pos := g.byPosition[position]
	if pos == nil {
		pos = &TypeValidity{Type: fmt.Sprintf("criterion %d", position)}
		g.byPosition[position] = pos
	}
	for _, v := range []*TypeValidity{&g.validity, pos} {
		v.Total++
		switch {
		case c.Valid == nil:
			v.Unjudged++
		case *c.Valid:
			v.Valid++
		default:
			v.Invalid++
		}
	}
	if c.Varies != nil {
		g.measured++
		if !*c.Varies {
			g.constant++
		}
	}
}

func blankAsNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}

func addValidity(v *TypeValidity, o TypeValidity) {
	v.Total, v.Valid, v.Invalid, v.Unjudged = v.Total+o.Total, v.Valid+o.Valid, v.Invalid+o.Invalid, v.Unjudged+o.Unjudged
}

// mergeGrounded adds the grounded figures of o, a later file.
func (a *acc) mergeGrounded(o *acc) {
	if o.grounded == nil {
		return
	}
	if a.grounded == nil {
		a.grounded = newGroundedAcc()
	}
	g, h := a.grounded, o.grounded
	g.records += h.records
	g.questions += h.questions
	g.criteria += h.criteria
	g.copying += h.copying
	g.measured += h.measured
	g.constant += h.constant
	for _, p := range [][2]hist{{g.perRecord, h.perRecord}, {g.perQuestion, h.perQuestion}, {g.totalWeight, h.totalWeight},
		{g.questionChars, h.questionChars}, {g.passageChars, h.passageChars}, {g.overlap, h.overlap}} {
		p[0].merge(p[1])
	}
	for w, n := range h.weights {
		g.weights[w] += n
	}
	for f := range g.filled {
		g.filled[f] += h.filled[f]
	}
	addValidity(&g.validity, h.validity)
	for k, v := range h.byPosition {
		if g.byPosition[k] == nil {
			g.byPosition[k] = &TypeValidity{Type: v.Type}
		}
		addValidity(g.byPosition[k], *v)
	}
	g.genres.merge(h.genres)
	g.depths.merge(h.depths)
	g.modes.merge(h.modes)
	g.edge.merge(h.edge)
}

// groundedReport is the Grounded section, nil without grounded records.
func (a *acc) groundedReport() *Grounded {
	g := a.grounded
	if g == nil {
		return nil
	}
	out := &Grounded{
		Records: g.records, Questions: g.questions, QuestionsPerRecord: g.perRecord.bins(), Criteria: g.criteria,
		CriteriaPerQuestion: summaryOrNil(g.perQuestion), CriteriaHistogram: g.perQuestion.bins(), Weights: []Weight{},
		TotalWeight: summaryOrNil(g.totalWeight), Completeness: make([]FieldFill, len(criterionFields)),
		QuestionChars: summaryOrNil(g.questionChars), PassageChars: summaryOrNil(g.passageChars), Overlap: summaryOrNil(g.overlap),
		CopyWords: CopyWords, Copying: g.copying, CopyingRate: ratio(g.copying, g.questions),
		Validity: g.validity, ByPosition: []TypeValidity{}, Measured: g.measured, Constant: g.constant, NoSignalShare: ratio(g.constant, g.measured),
		Genres: g.genres.counts(), Depths: g.depths.counts(), ReasoningModes: g.modes.counts(), OpenBookEdge: g.edge.report(),
	}
	for _, w := range slices.Sorted(maps.Keys(g.weights)) {
		out.Weights = append(out.Weights, Weight{w, g.weights[w]})
	}
	for f, name := range criterionFields {
		out.Completeness[f] = FieldFill{Field: name, Present: g.filled[f], Total: g.criteria, Share: ratio(g.filled[f], g.criteria)}
	}
	out.Validity.Type = "Overall"
	out.Validity.Rate = ratio(out.Validity.Valid, out.Validity.Valid+out.Validity.Invalid)
	for _, k := range slices.Sorted(maps.Keys(g.byPosition)) {
		v := *g.byPosition[k]
		v.Rate = ratio(v.Valid, v.Valid+v.Invalid)
		out.ByPosition = append(out.ByPosition, v)
	}
	return out
}

// gateValidity is the validity --min-validity checks: the math items' and
// the grounded criteria's verdicts together.
func (r *Report) gateValidity() TypeValidity {
	var v TypeValidity
	if r.Validity != nil {
		v = r.Validity.Overall
	}
	if g := r.Grounded; g != nil {
		addValidity(&v, g.Validity)
		v.Rate = ratio(v.Valid, v.Valid+v.Invalid)
	}
	return v
}

// summaryOrNil is h's summary, nil when h counts nothing.
func summaryOrNil(h hist) *Summary {
	if h.n() == 0 {
		return nil
	}
	s := h.summary()
	return &s
}

// checkGrounded runs the grounded structural rules on one record.
func (a *acc) checkGrounded(r *row, rowNum int64) {
	g := r.Grounded
	if g == nil {
		a.violate(r, rowNum, nil, RuleGroundedPayload, "style grounded without the grounded payload (passage, questions)")
		return
	}
	if strings.TrimSpace(g.Passage) == "" {
		a.violate(r, rowNum, nil, RuleNoPassage, "the passage is blank")
	}
	if len(g.Questions) == 0 {
		a.violate(r, rowNum, nil, RuleNoQuestions, "the passage has no questions")
	}
	for k := range g.Questions {
		q := &g.Questions[k]
		where := fmt.Sprintf("question %d", q.Index)
		if strings.TrimSpace(q.Question) == "" {
			a.violate(r, rowNum, nil, RuleNoQuestion, "%s is blank", where)
		}
		if len(q.Criteria) == 0 {
			a.violate(r, rowNum, nil, RuleNoCriteria, "%s has no criteria", where)
			continue
		}
		seen := map[string]bool{}
		for i := range q.Criteria {
			c := &q.Criteria[i]
			switch {
			case strings.TrimSpace(c.ID) == "":
				a.violate(r, rowNum, nil, RuleCriterionID, "%s, criterion %d has no id", where, i+1)
			case seen[c.ID]:
				a.violate(r, rowNum, nil, RuleCriterionID, "%s, criterion id %q appears twice", where, c.ID)
			}
			seen[c.ID] = true
			switch {
			case math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) || c.Weight < 0:
				a.violate(r, rowNum, nil, RuleCriterionWeight, "%s, criterion %q has weight %v", where, c.ID, c.Weight)
			case c.Weight < schema.MinWeight || c.Weight > schema.MaxWeight: // the scale the synthesis template states (prompts.MinWeight, MaxWeight)
				a.violate(r, rowNum, nil, RuleCriterionWeight, "%s, criterion %q has weight %v, outside the %d-%d scale the synthesis template asks for",
					where, c.ID, c.Weight, schema.MinWeight, schema.MaxWeight)
			}
			if strings.TrimSpace(c.Name) == "" || strings.TrimSpace(c.Description) == "" {
				a.violate(r, rowNum, nil, RuleCriterionText, "%s, criterion %q lacks a name or a description", where, c.ID)
			}
		}
		if w := schema.TotalWeight(q.Criteria); !(w > 0) {
			a.violate(r, rowNum, nil, RuleCriterionWeight, "%s has total weight %v; a reward divides by it", where, w)
		}
	}
}

// wordIndex finds the longest run of a question's words in a passage.
type wordIndex struct {
	words []string
	at    map[string][]int
}

// normWords are the words of s, lower-cased, without punctuation.
func normWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

func newWordIndex(passage string) *wordIndex {
	x := &wordIndex{words: normWords(passage), at: map[string][]int{}}
	for i, w := range x.words {
		x.at[w] = append(x.at[w], i)
	}
	return x
}

// longestRun is the most consecutive words of question that appear
// consecutively in the passage.
func (x *wordIndex) longestRun(question string) int {
	q := normWords(question)
	best := 0
	for i := range q {
		if len(q)-i <= best {
			break
		}
		for _, j := range x.at[q[i]] {
			n := 1
			for i+n < len(q) && j+n < len(x.words) && q[i+n] == x.words[j+n] {
				n++
			}
			best = max(best, n)
		}
	}
	return best
}

// groundedHead is what the audit reads of a record with the grounded
// column: row's columns and the payload.
type groundedHead struct {
	ID         string           `parquet:"id"`
	Split      string           `parquet:"split"`
	Problem    string           `parquet:"problem"`
	Answer     string           `parquet:"answer"`
	Style      string           `parquet:"style"`
	Rubric     []item           `parquet:"rubric,list"`
	Rollouts   []rollout        `parquet:"rollouts,list"`
	NCorrect   int32            `parquet:"n_correct"`
	PassRate   float64          `parquet:"pass_rate"`
	Provenance provenance       `parquet:"provenance"`
	Usage      schema.Usage     `parquet:"usage"`
	Grounded   *schema.Grounded `parquet:"grounded,optional"`
}

// scanRows is scanFile for the audit's rows: a Parquet record file is
// read with its grounded column (nil in older shards, which lack it),
// through the shard the input holds open.
func scanRows(f File, format string, fn func(*row, int64) error, bad func(Problem)) (int64, error) {
	if f.JSONL || format == FormatVerl {
		return scanFile(f, format, rowOfLabel, fn, bad)
	}
	return scanFile(f, format, func(*schema.Label, string) groundedHead { return groundedHead{} }, func(h *groundedHead, rows int64) error {
		r := row{ID: h.ID, Split: h.Split, Problem: h.Problem, Answer: h.Answer, Style: h.Style, Rubric: h.Rubric,
			Rollouts: h.Rollouts, NCorrect: h.NCorrect, PassRate: h.PassRate, Provenance: h.Provenance, Usage: h.Usage, Grounded: h.Grounded}
		return fn(&r, rows)
	}, bad)
}

// groundedRowOfLabel is the row of a verl export's grounded question: a
// record holding that one question.
func groundedRowOfLabel(l *schema.Label, split string) row {
	g := l.Grounded
	r := row{ID: l.ID, Split: split, Style: l.Style, Rubric: []item{}, Grounded: &schema.Grounded{
		DocID: g.DocID, PassageID: g.PassageID, Title: g.Title, Passage: g.Passage, DocHash: g.DocHash,
		Questions: []schema.GroundedQuestion{{Index: g.Index, Question: l.Question, Criteria: g.Criteria}},
	}}
	r.Provenance.SpecVersion = l.V
	return r
}

// textGrounded writes the Grounded section.
func (r *Report) textGrounded(w io.Writer) {
	g := r.Grounded
	if g == nil {
		return
	}
	if r.Corpus.Format == FormatVerl {
		heading(w, "Grounded records: %s rows of a verl export (one a question), %s criteria", num(g.Records), num(g.Criteria))
	} else {
		heading(w, "Grounded records: %s passages, %s questions, %s criteria", num(g.Records), num(g.Questions), num(g.Criteria))
	}
	t := newTable("per question", "mean", "std", "median", "min", "max")
	for _, s := range []struct {
		name string
		s    *Summary
	}{{"criteria", g.CriteriaPerQuestion}, {"total weight W", g.TotalWeight}, {"question chars", g.QuestionChars},
		{"overlap words", g.Overlap}, {"passage chars (per passage)", g.PassageChars}} {
		if s.s == nil {
			t.add(s.name, "-", "-", "-", "-", "-")
			continue
		}
		t.add(s.name, f2(s.s.Mean), f2(s.s.Std), formatFloat(s.s.Median), strconv.Itoa(s.s.Min), strconv.Itoa(s.s.Max))
	}
	t.write(w)
	fmt.Fprintf(w, "%squestions repeating %d or more consecutive passage words: %s (%s)\n", indent, CopyWords, num(g.Copying), pctOf(g.Copying, g.Questions))

	heading(w, "Grounded criteria: weights and completeness")
	weights := make([]string, len(g.Weights))
	for i, wt := range g.Weights {
		weights[i] = formatFloat(wt.Weight) + ": " + num(wt.Items)
	}
	fmt.Fprintf(w, "%sweights: %s\n", indent, strings.Join(weights, ", "))
	t = newTable("field", "present", "of", "share")
	for _, f := range g.Completeness {
		t.add(f.Field, num(f.Present), num(f.Total), pctOf(f.Present, f.Total))
	}
	t.write(w)

	heading(w, "Grounded criteria: validity by position (the validity judge against the passage)")
	t = newTable("criterion", "total", "valid", "invalid", "unjudged", "rate")
	for _, v := range append(slices.Clone(g.ByPosition), g.Validity) {
		t.add(v.Type, num(v.Total), num(v.Valid), num(v.Invalid), num(v.Unjudged), pct(v.Rate))
	}
	t.write(w)
	if g.Measured > 0 {
		fmt.Fprintf(w, "%sempirical: %s criteria measured, %s constant over the closed-book answers (no training signal)\n", indent, num(g.Measured), num(g.Constant))
	}
	if g.OpenBookEdge != nil {
		g.OpenBookEdge.text(w)
	}

	heading(w, "Grounded passages: the analysis")
	t = newTable("field", "values (passages)").leftAlign(1)
	t.add("genre", countList(g.Genres))
	t.add("depth", countList(g.Depths))
	t.add("reasoning mode", countList(g.ReasoningModes))
	t.write(w)
}
