package sim

import (
	"encoding/json"
	"strconv"

	"github.com/rubricforge/rubricforge/internal/jsonenc"
)

// The grounded replies' JSON written field by field, byte for byte what
// encoding/json's Marshal makes of the same values, without its reflection
// (TestGroundedReplyJSONMatchesMarshal, FuzzGroundedReplyJSON): the
// simulated endpoint writes one of these for every grounded request.

// jsonAppender is a reply value that writes its own JSON.
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

// questionsReply is the synthesis reply, {"questions": [...]}.
type questionsReply []questionJSON

func (q questionsReply) appendJSON(b []byte) []byte {
	b = appendList(append(b, `{"questions":`...), q, (*questionJSON).appendJSON)
	return append(b, '}')
}

func (q *questionJSON) appendJSON(b []byte) []byte {
	b = jsonenc.AppendString(append(b, `{"question":`...), q.Question)
	b = jsonenc.AppendString(append(b, `,"question_rationale":`...), q.Rationale)
	b = appendList(append(b, `,"criteria":`...), q.Criteria, (*criterionJSON).appendJSON)
	return append(b, '}')
}

func (c *criterionJSON) appendJSON(b []byte) []byte {
	b = jsonenc.AppendString(append(b, `{"id":`...), c.ID)
	b = appendAny(append(b, `,"weight":`...), c.Weight)
	b = jsonenc.AppendString(append(b, `,"name":`...), c.Name)
	b = jsonenc.AppendString(append(b, `,"description":`...), c.Description)
	b = appendStrings(append(b, `,"required_elements":`...), c.RequiredElements)
	b = jsonenc.AppendString(append(b, `,"scoring_guide":`...), c.ScoringGuide)
	b = jsonenc.AppendString(append(b, `,"verification_method":`...), c.VerificationMethod)
	b = appendStrings(append(b, `,"expected_keywords":`...), c.ExpectedKeywords)
	b = appendStrings(append(b, `,"expected_concepts":`...), c.ExpectedConcepts)
	return append(b, '}')
}

// enrichReply is the enrich stage's reply, a JSON array of completions.
type enrichReply []enrichJSON

func (e enrichReply) appendJSON(b []byte) []byte {
	return appendList(b, e, (*enrichJSON).appendJSON)
}

func (e *enrichJSON) appendJSON(b []byte) []byte {
	b = jsonenc.AppendString(append(b, `{"id":`...), e.ID)
	b = jsonenc.AppendString(append(b, `,"verification_method":`...), e.VerificationMethod)
	b = appendStrings(append(b, `,"expected_keywords":`...), e.ExpectedKeywords)
	b = appendStrings(append(b, `,"expected_concepts":`...), e.ExpectedConcepts)
	return append(b, '}')
}

func (a analysisJSON) appendJSON(b []byte) []byte {
	b = jsonenc.AppendString(append(b, `{"genre":`...), a.Genre)
	b = jsonenc.AppendString(append(b, `,"contribution":`...), a.Contribution)
	b = appendStrings(append(b, `,"concepts":`...), a.Concepts)
	b = jsonenc.AppendString(append(b, `,"depth":`...), a.Depth)
	b = jsonenc.AppendString(append(b, `,"reasoning_mode":`...), a.ReasoningMode)
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	return appendList(b, ss, func(s *string, b []byte) []byte { return jsonenc.AppendString(b, *s) })
}

// appendList writes a JSON array of items, each by appendItem; nil is null,
// as encoding/json writes a nil slice.
func appendList[T any](b []byte, items []T, appendItem func(*T, []byte) []byte) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(&items[i], b)
	}
	return append(b, ']')
}

// appendAny writes a weight: an int, a float64 or a string (a malformed
// reply's); anything else as encoding/json writes it.
func appendAny(b []byte, v any) []byte {
	switch x := v.(type) {
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float64:
		return jsonenc.AppendFloat(b, x)
	case string:
		return jsonenc.AppendString(b, x)
	}
	raw, _ := json.Marshal(v)
	return append(b, raw...)
}
