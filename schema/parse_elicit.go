package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// MaxElicited bounds the criteria one elicitation reply may propose.
const MaxElicited = 8

// ParseElicited parses an extractor's reply to the elicitation prompt: a
// JSON array (in prose or a fence, after any reasoning; see ExtractJSON) of
// {"type": "PROCESS" or "PITFALL", "text": string, "weight": 1 to 5}. An
// empty array is an answer: no new criterion. The items come back with ids
// 0, in the reply's order, their polarity from their type.
func ParseElicited(text string) ([]Item, error) {
	span, err := ExtractJSON(text, '[')
	if err != nil {
		return nil, err
	}
	var raw []struct {
		Type   *string  `json:"type"`
		Text   *string  `json:"text"`
		Weight *float64 `json:"weight"`
	}
	if err := json.Unmarshal([]byte(span), &raw); err != nil {
		return nil, fmt.Errorf("the array is not a list of {\"type\", \"text\", \"weight\"} objects: %v", err)
	}
	if len(raw) > MaxElicited {
		return nil, fmt.Errorf("%d criteria, more than the %d asked for", len(raw), MaxElicited)
	}
	out := make([]Item, 0, len(raw))
	for i, r := range raw {
		f := fmt.Sprintf("[%d]", i)
		switch {
		case r.Type == nil || (*r.Type != TypeProcess && *r.Type != TypePitfall):
			return nil, fmt.Errorf("%s.type: expected \"PROCESS\" or \"PITFALL\"", f)
		case r.Text == nil || strings.TrimSpace(*r.Text) == "":
			return nil, fmt.Errorf("%s.text: missing or blank", f)
		case len(*r.Text) > MaxCriterionBytes || !utf8.ValidString(*r.Text):
			return nil, fmt.Errorf("%s.text: longer than %d bytes or not UTF-8", f, MaxCriterionBytes)
		case r.Weight == nil || *r.Weight < 1 || *r.Weight > MaxCriterionPoints || math.IsNaN(*r.Weight):
			return nil, fmt.Errorf("%s.weight: expected a number from 1 to %d", f, MaxCriterionPoints)
		}
		out = append(out, Item{Type: *r.Type, Text: collapseSpace(*r.Text), Weight: *r.Weight, Polarity: PolarityOf(*r.Type)})
	}
	return out, nil
}
