package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/internal/jsonscan"
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

func parseCriterion(c pathObj) (Criterion, error) {
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
		o := pathObj{raw, fmt.Sprintf("[%d]", raw.item-1)}
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

// pathObj is a JSON object of a reply with the path that leads to it, for
// errors that name nested fields.
type pathObj struct {
	jsonObj
	path string
}

func (o pathObj) field(name string) string {
	if o.path == "" {
		return name
	}
	return o.path + "." + name
}

func (o pathObj) fieldErr(name, format string, args ...any) *ParseError {
	return parseErr(o.line, 0, o.field(name), format, args...)
}

func (o pathObj) value(name string) (json.RawMessage, error) {
	v, ok := o.fields.get(name)
	if !ok {
		return nil, o.fieldErr(name, "missing")
	}
	if string(v) == "null" {
		return nil, o.fieldErr(name, "is null")
	}
	return v, nil
}

// text reads a non-empty JSON string, trimmed.
func (o pathObj) text(name string) (string, error) {
	v, err := o.value(name)
	if err != nil {
		return "", err
	}
	if v[0] != '"' {
		return "", o.fieldErr(name, "must be a JSON string, got %s", describeJSON(v))
	}
	s, ok := jsonscan.Unquote(v)
	if !ok {
		return "", o.fieldErr(name, "%v", jsonscan.ErrNotJSON)
	}
	if s = strings.TrimSpace(s); s == "" {
		return "", o.fieldErr(name, "is empty")
	}
	return s, nil
}

// number reads a finite JSON number.
func (o pathObj) number(name string) (float64, error) {
	v, err := o.value(name)
	if err != nil {
		return 0, err
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		return 0, o.fieldErr(name, "must be a JSON number, got %s", describeJSON(v))
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, o.fieldErr(name, "must be a finite number, got %s", v)
	}
	return f, nil
}

// texts reads a JSON array of at least least non-empty strings, trimmed.
func (o pathObj) texts(name string, least int) ([]string, error) {
	v, err := o.value(name)
	if err != nil {
		return nil, err
	}
	if v[0] != '[' {
		return nil, o.fieldErr(name, "must be a JSON array of strings, got %s", describeJSON(v))
	}
	var out []string
	err = jsonscan.EachElement(v, func(e []byte, _ int) error {
		s, ok := "", false
		if e[0] == '"' {
			s, ok = jsonscan.Unquote(e)
		}
		if !ok {
			return o.fieldErr(fmt.Sprintf("%s[%d]", name, len(out)), "must be a JSON string, got %s", describeJSON(e))
		}
		if s = strings.TrimSpace(s); s == "" {
			return o.fieldErr(fmt.Sprintf("%s[%d]", name, len(out)), "is empty")
		}
		out = append(out, s)
		return nil
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		return nil, o.fieldErr(name, "must be a JSON array of strings, got %s", describeJSON(v))
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []string{}
	}
	if len(out) < least {
		return nil, o.fieldErr(name, "has %d entries; at least %d are required", len(out), least)
	}
	return out, nil
}

// objects reads a JSON array of objects.
func (o pathObj) objects(name string) ([]pathObj, error) {
	v, err := o.value(name)
	if err != nil {
		return nil, err
	}
	if v[0] != '[' {
		return nil, o.fieldErr(name, "must be a JSON array of objects, got %s", describeJSON(v))
	}
	var out []pathObj
	err = jsonscan.EachElement(v, func(e []byte, _ int) error {
		path := fmt.Sprintf("%s[%d]", o.field(name), len(out))
		if e[0] != '{' {
			return parseErr(o.line, 0, path, "must be a JSON object, got %s", describeJSON(e))
		}
		jo, err := decodeObject(e, o.line, 0)
		if err != nil {
			if pe, ok := err.(*ParseError); ok {
				pe.Field = path + fieldSuffix(pe.Field)
			}
			return err
		}
		out = append(out, pathObj{jo, path})
		return nil
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		return nil, o.fieldErr(name, "must be a JSON array of objects, got %s", describeJSON(v))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func fieldSuffix(f string) string {
	if f == "" {
		return ""
	}
	return "." + f
}

// objectWith finds the reply's first JSON object that has the key.
func objectWith(text, key string) (pathObj, error) {
	r, err := newReply(text)
	if err != nil {
		return pathObj{}, err
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
		return pathObj{}, err
	}
	found.line = r.lineAt(off)
	return pathObj{found, ""}, nil
}
