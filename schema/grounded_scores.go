package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/internal/jsonscan"
)

// GroundedScores is the grounded reward judge's reply for one response (seed
// 001, appendix D): a score per criterion, each from 0 to its weight, their
// total and the rubric's total weight as the judge read it.
type GroundedScores struct {
	// Scores are in the order of the criteria the parser was given.
	Scores    []float64
	Total     float64 // the sum of Scores, within SumTolerance
	MaxTotal  float64 // the criteria's total weight W, within SumTolerance
	Reasoning string  // the judge's brief justification; may be empty
}

// SumTolerance is how far the reply's "total" may be from the sum of its
// scores, and its "max_total" from W, before the reply is rejected: 0.01, or
// 0.1% of W when W is above 10. It absorbs a judge rounding a sum of
// fractions to two decimals; a total on another scale (a percentage, a mean,
// a 0-1 fraction of a W of 12) is far outside it.
func SumTolerance(w float64) float64 { return max(0.01, w/1000) }

// ParseGroundedScores parses the grounded judge's reply
//
//	{"scores": {"<criterion id>": s, ...}, "total": t, "max_total": W, "reasoning": "..."}
//
// against criteria. The verdict is the JSON object with a "scores" key in
// the reply's answer, after any reasoning (judgeVerdict: prose, fences, a
// <think> block, Harmony channels are fine; two objects with different
// scores there are a parse failure); the top-level keys match without
// regard to case. It is a parse failure, with a message fit to show
// back to the judge, when: "scores" is not an object; a criterion id is
// missing from it, unknown to the rubric or given twice (ids match exactly);
// a score is not a JSON number, is below 0 or above its criterion's weight;
// "total" is missing or differs from the sum of the scores, or "max_total" is
// missing or differs from W (both beyond SumTolerance(W)). "reasoning" may be
// absent; if present it must be a string.
//
// Empty criteria, an empty or repeated criterion id, or a weight that is
// negative or not finite are faults of the caller: a plain error, not a
// *ParseError.
func ParseGroundedScores(text string, criteria []Criterion) (GroundedScores, error) {
	return ParseGroundedScoresOf(text, "", criteria)
}

// ParseGroundedScoresOf is ParseGroundedScores of a reply about judged, the
// answer the judge was shown: scores in the reply that the answer itself
// holds (white space and backslashes aside) are a quote of what it
// planted, not the judge's, so a reply whose only scores are such quotes
// is a parse failure (see judgeVerdict).
func ParseGroundedScoresOf(text, judged string, criteria []Criterion) (GroundedScores, error) {
	index, w, err := criterionIndex(criteria)
	if err != nil {
		return GroundedScores{}, err
	}
	accept := func(r reply, span string, off int) error {
		o, err := decodeObject([]byte(span), 0, 0)
		if err == nil {
			if _, ok := o.fields.get("scores"); !ok {
				err = parseErr(0, 0, "", `the JSON object has no "scores" key`)
			}
		}
		return atLine(err, r, off)
	}
	decode := func(r reply, span string, off int) (GroundedScores, error) {
		return decodeGroundedScores(r, span, off, criteria, index, w)
	}
	return judgeVerdict(text, judged, '{', accept, decode, func(a, b GroundedScores) bool { return slices.Equal(a.Scores, b.Scores) })
}

// decodeGroundedScores reads the grounded judge's object at off of r.
func decodeGroundedScores(r reply, span string, off int, criteria []Criterion, index map[string]int, w float64) (GroundedScores, error) {
	o, err := decodeObject([]byte(span), r.lineAt(off), 0)
	if err != nil {
		return GroundedScores{}, err
	}
	var g GroundedScores
	if g.Scores, err = o.criterionScores(criteria, index); err != nil {
		return GroundedScores{}, err
	}
	var sum float64
	for _, s := range g.Scores {
		sum += s
	}
	tol := SumTolerance(w)
	if g.Total, err = o.number("total"); err != nil {
		return GroundedScores{}, err
	}
	if math.Abs(g.Total-sum) > tol {
		return GroundedScores{}, o.fieldErr("total", "%s is not the sum of the scores, %s", fmtNum(g.Total), fmtNum(sum))
	}
	if g.MaxTotal, err = o.number("max_total"); err != nil {
		return GroundedScores{}, err
	}
	if math.Abs(g.MaxTotal-w) > tol {
		return GroundedScores{}, o.fieldErr("max_total", "%s is not the criteria's total weight, %s", fmtNum(g.MaxTotal), fmtNum(w))
	}
	if _, ok := o.fields.get("reasoning"); ok {
		if g.Reasoning, err = o.str("reasoning"); err != nil {
			return GroundedScores{}, err
		}
	}
	return g, nil
}

// criterionIndex maps each criterion id to its position and sums the weights.
func criterionIndex(criteria []Criterion) (map[string]int, float64, error) {
	if len(criteria) == 0 {
		return nil, 0, errors.New("schema: ParseGroundedScores: no criteria")
	}
	index := make(map[string]int, len(criteria))
	for k, c := range criteria {
		switch {
		case c.ID == "":
			return nil, 0, fmt.Errorf("schema: ParseGroundedScores: criterion %d has no id", k+1)
		case math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) || c.Weight < 0:
			return nil, 0, fmt.Errorf("schema: ParseGroundedScores: criterion %q has weight %v; weights must be finite and non-negative", c.ID, c.Weight)
		}
		if _, dup := index[c.ID]; dup {
			return nil, 0, fmt.Errorf("schema: ParseGroundedScores: criterion id %q given twice", c.ID)
		}
		index[c.ID] = k
	}
	return index, TotalWeight(criteria), nil
}

// criterionScores reads the "scores" object: one number per criterion id,
// keys matched exactly, in criteria order.
func (o jsonObj) criterionScores(criteria []Criterion, index map[string]int) ([]float64, error) {
	v, err := o.value("scores")
	if err != nil {
		return nil, err
	}
	if v[0] != '{' {
		return nil, o.fieldErr("scores", "must be a JSON object keyed by criterion id, got %s", describeJSON(v))
	}
	scores := make([]float64, len(criteria))
	seen := make([]bool, len(criteria))
	err = jsonscan.EachMember(v, func(id string, raw []byte) error {
		k, ok := index[id]
		if !ok {
			return o.fieldErr("scores", "unknown criterion id %s; the criterion ids are %s", strconv.Quote(id), quoteIDs(criteria))
		}
		if seen[k] {
			return o.fieldErr("scores", "criterion %s is scored twice; score every criterion id exactly once", strconv.Quote(id))
		}
		seen[k] = true
		var err error
		scores[k], err = scoreValue(o, id, raw, criteria[k].Weight)
		return err
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		return nil, o.fieldErr("scores", "reading the object: %v", err)
	}
	if err != nil {
		return nil, err
	}
	var missing []string
	for k, c := range criteria {
		if !seen[k] {
			missing = append(missing, strconv.Quote(c.ID))
		}
	}
	if len(missing) > 0 {
		noun := "criterion"
		if len(missing) > 1 {
			noun = "criteria"
		}
		return nil, o.fieldErr("scores", "no score for %s %s; score every criterion id exactly once", noun, strings.Join(missing, ", "))
	}
	return scores, nil
}

// scoreValue reads one criterion's score: a JSON number from 0 to weight.
func scoreValue(o jsonObj, id string, raw json.RawMessage, weight float64) (float64, error) {
	field := "scores." + id
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, o.fieldErr(field, "must be a JSON number from 0 to %s, got %s", fmtNum(weight), describeJSON(raw))
	}
	s, err := strconv.ParseFloat(string(raw), 64)
	switch {
	case err != nil:
		return 0, o.fieldErr(field, "must be a number from 0 to %s, got %s", fmtNum(weight), raw)
	case s < 0:
		return 0, o.fieldErr(field, "%s is below 0; a score runs from 0 to the criterion's weight, %s", raw, fmtNum(weight))
	case s > weight:
		return 0, o.fieldErr(field, "%s is above the criterion's weight %s; a score runs from 0 to the weight", raw, fmtNum(weight))
	}
	return s, nil
}

// quoteIDs lists criterion ids for an error message, the first 20 of them.
func quoteIDs(criteria []Criterion) string {
	const show = 20
	parts := make([]string, 0, min(len(criteria), show+1))
	for i, c := range criteria {
		if i == show {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, strconv.Quote(c.ID))
	}
	return strings.Join(parts, ", ")
}

// fmtNum writes a number in its shortest form, as the prompt shows weights.
func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
