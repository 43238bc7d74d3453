package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// A rubricator (seed 002, RLCER: the policy in its second role) answers a
// question and one of its own responses with rubrics for that question, as
// one JSON object (the paper's appendix, the rubricator prompt's output
// format):
//
//	{"question_domain": "math/calculus",
//	 "rubrics": [{"category": "...", "criterion": "...", "points": 5}, ...],
//	 "maximum_score": a, "minimum_score": b, "current_score": x}
//
// with a the sum of the positive points, b the sum of the negative ones and
// x the response's own score, which must be below (a + b) / 2. ParseRubricator
// reads the structure; RubricatorOutput.FormatProblems checks the rest of the
// contract, which the paper's format reward pays.

// Limits on a rubricator's output.
const (
	// MaxRubricatorBytes bounds the reply read.
	MaxRubricatorBytes = 256 << 10
	// MaxProposedCriteria bounds the criteria of one output: the contract
	// asks for 5 to 15; more than this many is not read at all.
	MaxProposedCriteria = 64
	// MaxCriterionBytes bounds one criterion's text.
	MaxCriterionBytes = 2000
	// MaxProposedPoints bounds the magnitude of a criterion's points.
	MaxProposedPoints = 1e6
)

// The contract's ranges, checked by FormatProblems.
const (
	MinRubricatorCriteria = 5
	MaxRubricatorCriteria = 15
	MaxCriterionPoints    = 5
)

// ProposedCriterion is one rubric of a rubricator's output: a criterion and
// its signed points (positive rewards a merit, negative penalizes a flaw).
type ProposedCriterion struct {
	Category  string  `json:"category"`
	Criterion string  `json:"criterion"`
	Points    float64 `json:"points"`
}

// RubricatorOutput is a rubricator's output read by ParseRubricator.
type RubricatorOutput struct {
	Domain       string
	Rubrics      []ProposedCriterion
	MaximumScore float64
	MinimumScore float64
	CurrentScore float64
}

// rubricatorJSON has pointers so that a missing member is told from a zero.
type rubricatorJSON struct {
	Domain  *string `json:"question_domain"`
	Rubrics *[]struct {
		Category  *string  `json:"category"`
		Criterion *string  `json:"criterion"`
		Points    *float64 `json:"points"`
	} `json:"rubrics"`
	Max     *float64 `json:"maximum_score"`
	Min     *float64 `json:"minimum_score"`
	Current *float64 `json:"current_score"`
}

// ParseRubricator reads a rubricator's reply: after any reasoning (a
// <think> block, Harmony channels: see newReply), the reply must be one JSON
// object, alone or in one ```json fence, with every member of the contract
// of the right type: question_domain a string, rubrics a non-empty list of
// {category, criterion, points} (a string, a non-blank string, a finite
// number), maximum_score, minimum_score and current_score numbers. Members
// the contract does not name are ignored. Anything else (prose, an object
// inside prose, a member missing or of another type) is an error that names
// what is wrong.
func ParseRubricator(text string) (RubricatorOutput, error) {
	var out RubricatorOutput
	if len(text) > MaxRubricatorBytes {
		return out, fmt.Errorf("the reply has %d bytes, more than the %d read", len(text), MaxRubricatorBytes)
	}
	r, err := newReply(text)
	if err != nil {
		return out, err
	}
	body := unfence(strings.TrimSpace(r.body))
	if !strings.HasPrefix(body, "{") {
		return out, errors.New("the reply is not a JSON object (only the object, or the object in one ```json fence, may follow the reasoning)")
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var raw rubricatorJSON
	if err := dec.Decode(&raw); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Field != "" {
			return out, fmt.Errorf("%s: expected %s, got a JSON %s", typ.Field, rubricatorKind(typ.Type.Kind().String()), typ.Value)
		}
		return out, fmt.Errorf("the reply is not one valid JSON object: %v", err)
	}
	if dec.More() || strings.TrimSpace(body[dec.InputOffset():]) != "" {
		return out, errors.New("the reply has text after its JSON object")
	}
	return raw.output()
}

// unfence returns the inside of one ```json (or ```) fence around the whole
// of s, else s.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(strings.TrimSpace(inner[:nl]), "{[\"") {
		inner = inner[nl+1:] // the fence's language tag
	}
	if strings.Contains(inner, "```") {
		return s
	}
	return strings.TrimSpace(inner)
}

func rubricatorKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "struct", "map":
		return "an object"
	}
	return "a number"
}

// output checks raw's members and converts them.
func (raw *rubricatorJSON) output() (RubricatorOutput, error) {
	var out RubricatorOutput
	var missing []string
	for _, m := range []struct {
		name    string
		present bool
	}{
		{"question_domain", raw.Domain != nil}, {"rubrics", raw.Rubrics != nil}, {"maximum_score", raw.Max != nil},
		{"minimum_score", raw.Min != nil}, {"current_score", raw.Current != nil},
	} {
		if !m.present {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("the object has no %s", strings.Join(missing, ", "))
	}
	rubrics := *raw.Rubrics
	switch {
	case len(rubrics) == 0:
		return out, errors.New("rubrics: empty")
	case len(rubrics) > MaxProposedCriteria:
		return out, fmt.Errorf("rubrics: %d criteria, more than the %d read", len(rubrics), MaxProposedCriteria)
	}
	out.Domain = *raw.Domain
	out.MaximumScore, out.MinimumScore, out.CurrentScore = *raw.Max, *raw.Min, *raw.Current
	out.Rubrics = make([]ProposedCriterion, len(rubrics))
	for i, c := range rubrics {
		f := fmt.Sprintf("rubrics[%d]", i)
		switch {
		case c.Criterion == nil:
			return out, fmt.Errorf("%s.criterion: missing", f)
		case strings.TrimSpace(*c.Criterion) == "":
			return out, fmt.Errorf("%s.criterion: blank", f)
		case len(*c.Criterion) > MaxCriterionBytes:
			return out, fmt.Errorf("%s.criterion: %d bytes, more than the %d allowed", f, len(*c.Criterion), MaxCriterionBytes)
		case !utf8.ValidString(*c.Criterion):
			return out, fmt.Errorf("%s.criterion: not valid UTF-8", f)
		case c.Points == nil:
			return out, fmt.Errorf("%s.points: missing", f)
		case math.Abs(*c.Points) > MaxProposedPoints:
			return out, fmt.Errorf("%s.points: %v is beyond ±%g", f, *c.Points, float64(MaxProposedPoints))
		case c.Category == nil:
			return out, fmt.Errorf("%s.category: missing", f)
		}
		out.Rubrics[i] = ProposedCriterion{Category: *c.Category, Criterion: strings.TrimSpace(*c.Criterion), Points: *c.Points}
	}
	return out, nil
}

// FormatProblems lists how o departs from the rest of the contract, which
// RLCER's format reward asks for (eq. 11 pays 1 only for a correct format;
// the paper enforces current_score below the midpoint through it): between
// MinRubricatorCriteria and MaxRubricatorCriteria criteria, every criterion
// with a category and integer points from 1 to 5 or from -5 to -1,
// question_domain not blank, maximum_score the sum of the positive points,
// minimum_score the sum of the negative ones, and current_score below
// (maximum_score + minimum_score) / 2. Empty when the format is correct.
func (o RubricatorOutput) FormatProblems() []string {
	var out []string
	if strings.TrimSpace(o.Domain) == "" {
		out = append(out, "question_domain is blank")
	}
	if n := len(o.Rubrics); n < MinRubricatorCriteria || n > MaxRubricatorCriteria {
		out = append(out, fmt.Sprintf("%d criteria, not %d to %d", n, MinRubricatorCriteria, MaxRubricatorCriteria))
	}
	var pos, neg float64
	for i, c := range o.Rubrics {
		if a := math.Abs(c.Points); a < 1 || a > MaxCriterionPoints || a != math.Trunc(a) {
			out = append(out, fmt.Sprintf("rubrics[%d].points %v is not an integer from 1 to %d or from -%d to -1", i, c.Points, MaxCriterionPoints, MaxCriterionPoints))
		}
		if strings.TrimSpace(c.Category) == "" {
			out = append(out, fmt.Sprintf("rubrics[%d].category is blank", i))
		}
		if c.Points > 0 {
			pos += c.Points
		} else {
			neg += c.Points
		}
	}
	if !sameScore(o.MaximumScore, pos) {
		out = append(out, fmt.Sprintf("maximum_score %v is not the sum of the positive points, %v", o.MaximumScore, pos))
	}
	if !sameScore(o.MinimumScore, neg) {
		out = append(out, fmt.Sprintf("minimum_score %v is not the sum of the negative points, %v", o.MinimumScore, neg))
	}
	if mid := (o.MaximumScore + o.MinimumScore) / 2; !(o.CurrentScore < mid) {
		out = append(out, fmt.Sprintf("current_score %v is not below (maximum_score + minimum_score) / 2 = %v", o.CurrentScore, mid))
	}
	return out
}

func sameScore(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// CriterionKey is the identity of a proposed criterion across proposals:
// its text with white space collapsed and case folded, and the sign of its
// points. Proposals naming the same criterion share one verdict.
func CriterionKey(c ProposedCriterion) string {
	var b bytes.Buffer
	if c.Points < 0 {
		b.WriteString("-\x00")
	} else {
		b.WriteString("+\x00")
	}
	b.WriteString(strings.ToLower(strings.Join(strings.Fields(c.Criterion), " ")))
	return b.String()
}
