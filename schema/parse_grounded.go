package schema

import (
	"fmt"
	"strings"
)

// The grounded style's parsers follow the JSON rules of parse_json.go. A
// field inside a nested object is named by its path, as in
// "questions[1].criteria[3].weight" (positions from 0, as the reply's
// arrays count), so a repair prompt can say exactly what to fix.

// ParseAnalysis parses the analyze stage's reply: one JSON object with
// "genre", "contribution", "depth", "reasoning_mode" (non-empty strings)
// and "concepts" (a non-empty list of non-empty strings).
func ParseAnalysis(text string) (Analysis, error) {
	o, err := objectWith(text, "genre")
	if err != nil {
		return Analysis{}, err
	}
	var a Analysis
	for _, f := range []struct {
		name string
		to   *string
	}{{"genre", &a.Genre}, {"contribution", &a.Contribution}, {"depth", &a.Depth}, {"reasoning_mode", &a.ReasoningMode}} {
		if *f.to, err = o.text(f.name); err != nil {
			return Analysis{}, err
		}
	}
	if a.Concepts, err = o.texts("concepts", 1); err != nil {
		return Analysis{}, err
	}
	return a, nil
}

// QuestionOptions bound the synthesize stage's reply.
type QuestionOptions struct {
	K                        int // questions required
	MinCriteria, MaxCriteria int
}

// ParseQuestions parses the synthesize stage's reply: one JSON object whose
// "questions" holds exactly K objects, each with "question" and
// "question_rationale" (non-empty strings) and "criteria": between
// MinCriteria and MaxCriteria objects with every field of seed 001's
// appendix E. A criterion's "id" is a non-empty string unique in its
// rubric; "weight" a finite, non-negative number; "name", "description",
// "scoring_guide", "verification_method" non-empty strings;
// "required_elements" a non-empty list of non-empty strings;
// "expected_keywords" and "expected_concepts" lists of non-empty strings
// (possibly empty: the enrich stage completes them). Questions get Index
// 0..K-1.
func ParseQuestions(text string, opt QuestionOptions) ([]GroundedQuestion, error) {
	if opt.K < 1 || opt.MinCriteria < 1 || opt.MaxCriteria < opt.MinCriteria {
		return nil, fmt.Errorf("schema: ParseQuestions: bad options %+v", opt)
	}
	o, err := objectWith(text, "questions")
	if err != nil {
		return nil, err
	}
	qs, err := o.objects("questions")
	if err != nil {
		return nil, err
	}
	if len(qs) != opt.K {
		return nil, o.fieldErr("questions", "has %d entries; exactly %d are required", len(qs), opt.K)
	}
	out := make([]GroundedQuestion, len(qs))
	for k, q := range qs {
		gq := GroundedQuestion{Index: int32(k), Answers: []GroundedAnswer{}}
		if gq.Question, err = q.text("question"); err != nil {
			return nil, err
		}
		if gq.Rationale, err = q.text("question_rationale"); err != nil {
			return nil, err
		}
		cs, err := q.objects("criteria")
		if err != nil {
			return nil, err
		}
		if n := len(cs); n < opt.MinCriteria || n > opt.MaxCriteria {
			return nil, q.fieldErr("criteria", "has %d criteria; between %d and %d are required", n, opt.MinCriteria, opt.MaxCriteria)
		}
		seen := make(map[string]int, len(cs))
		gq.Criteria = make([]Criterion, 0, len(cs))
		for j, c := range cs {
			crit, err := parseCriterion(c)
			if err != nil {
				return nil, err
			}
			if prev, dup := seen[crit.ID]; dup {
				return nil, c.fieldErr("id", "%q is also the id of criteria[%d]; ids must be unique within a rubric", crit.ID, prev)
			}
			seen[crit.ID] = j
			gq.Criteria = append(gq.Criteria, crit)
		}
		out[k] = gq
	}
	return out, nil
}

func parseCriterion(c jsonObj) (Criterion, error) {
	var cr Criterion
	var err error
	if cr.ID, err = c.text("id"); err != nil {
		return cr, err
	}
	if cr.Weight, err = c.number("weight"); err != nil {
		return cr, err
	}
	if cr.Weight < 0 {
		return cr, c.fieldErr("weight", "must not be negative, got %g", cr.Weight)
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"name", &cr.Name}, {"description", &cr.Description}, {"scoring_guide", &cr.ScoringGuide}, {"verification_method", &cr.VerificationMethod}} {
		if *f.to, err = c.text(f.name); err != nil {
			return cr, err
		}
	}
	if cr.RequiredElements, err = c.texts("required_elements", 1); err != nil {
		return cr, err
	}
	if cr.ExpectedKeywords, err = c.texts("expected_keywords", 0); err != nil {
		return cr, err
	}
	if cr.ExpectedConcepts, err = c.texts("expected_concepts", 0); err != nil {
		return cr, err
	}
	return cr, nil
}

// Enrichment is the enrich stage's completion of one criterion.
type Enrichment struct {
	ID                 string
	VerificationMethod string
	Keywords, Concepts []string
}

// ParseEnrichment parses the enrich stage's reply: a JSON array of objects
// {"id": string, "verification_method": string, "expected_keywords":
// [string], "expected_concepts": [string]}, every id in ids exactly once,
// with at least minKeywords keywords and minConcepts concepts. The
// completions come back in the order of ids.
func ParseEnrichment(text string, ids []string, minKeywords, minConcepts int) ([]Enrichment, error) {
	index := make(map[string]int, len(ids))
	for k, id := range ids {
		if _, dup := index[id]; dup {
			return nil, fmt.Errorf("schema: ParseEnrichment: id %q asked for twice", id)
		}
		index[id] = k
	}
	objs, _, err := objectArray(text)
	if err != nil {
		return nil, err
	}
	out := make([]Enrichment, len(ids))
	from := make([]int, len(ids))
	for _, raw := range objs {
		o := raw.at(fmt.Sprintf("[%d]", raw.item-1))
		var e Enrichment
		if e.ID, err = o.text("id"); err != nil {
			return nil, err
		}
		k, ok := index[e.ID]
		switch {
		case !ok:
			return nil, o.fieldErr("id", "unknown id %q; the ids are %s", e.ID, quoteList(ids))
		case from[k] != 0:
			return nil, o.fieldErr("id", "id %q appears twice; give every id exactly once", e.ID)
		}
		if e.VerificationMethod, err = o.text("verification_method"); err != nil {
			return nil, err
		}
		if e.Keywords, err = o.texts("expected_keywords", minKeywords); err != nil {
			return nil, err
		}
		if e.Concepts, err = o.texts("expected_concepts", minConcepts); err != nil {
			return nil, err
		}
		out[k], from[k] = e, raw.item
	}
	var missing []string
	for k, id := range ids {
		if from[k] == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, parseErr(0, 0, "", "no completion for %s; give every id exactly once", quoteList(missing))
	}
	return out, nil
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

func fieldSuffix(f string) string {
	if f == "" {
		return ""
	}
	return "." + f
}

// objectWith finds the reply's first JSON object that has the key.
func objectWith(text, key string) (jsonObj, error) {
	r, err := newReply(text)
	if err != nil {
		return jsonObj{}, err
	}
	// The object accepted is kept, so the reply is decoded once; its line
	// numbers are set from where findJSON found it.
	var found jsonObj
	_, off, err := findJSON(r, '{', func(r reply, span string, off int) error {
		o, err := decodeObject([]byte(span), 0, 0)
		if err == nil {
			if _, ok := o.fields.get(key); !ok {
				err = parseErr(0, 0, "", "the JSON object has no %q key", key)
			}
		}
		found = o
		return atLine(err, r, off)
	})
	if err != nil {
		return jsonObj{}, err
	}
	found.line = r.lineAt(off)
	return found, nil
}
