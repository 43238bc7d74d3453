package schema

import (
	"math"
	"strings"
	"unicode/utf8"
)

// Rules a rubric can break, as RubricViolation.Rule names them. The names
// are stable: `validate` counts and reports violations by them.
const (
	RuleStyle        = "style"           // unknown rubric style
	RuleNoItems      = "no_items"        // the rubric is empty
	RuleItemID       = "item_id"         // ids are not 1..n in order
	RuleItemType     = "item_type"       // a type the style does not allow
	RuleItemText     = "item_text"       // blank, not UTF-8, or (srar) several lines
	RulePolarity     = "polarity"        // polarity differs from PolarityOf(type)
	RuleWeight       = "weight"          // not positive, or (factual_process) not an integer 1-5
	RuleSatRate      = "sat_rate"        // outside [0, 1]
	RuleCorr         = "corr"            // outside [-1, 1]
	RuleSuggest      = "suggest_missing" // srar: no SUGGEST item
	RuleAnswerCount  = "answer_count"    // srar: not exactly one ANSWER item
	RuleTooManyItems = "too_many_items"  // srar: more than maxItems
	RuleItemCount    = "item_count"      // factual_process: fewer than 3 or more than 10 items
)

// RubricViolation is one structural rule a rubric breaks. Err.Item is the
// 1-based position of the item, 0 for a rule about the rubric as a whole.
type RubricViolation struct {
	Rule string
	Err  *ParseError
}

// CheckRubric checks the structural rules a rubric of the given style must
// satisfy, and returns the first violation as a *ParseError naming the item
// (by position) and the field. It is what the pipeline runs after parsing;
// RubricViolations lists every violation, for `validate`.
//
// Every style: at least one item; ids 1..n in order; a type the style allows;
// text that is valid UTF-8 and not blank; polarity equal to PolarityOf(type);
// weight finite and > 0; sat_rate, when set, in [0, 1] and corr, when set, in
// [-1, 1].
//
// srar: text on one line (the SRaR line export needs it); at least one
// SUGGEST; exactly one ANSWER; at most maxItems items, where maxItems <= 0
// means no limit.
//
// factual_process: 3 to 10 items (maxItems is not used); weights integers
// from 1 to 5.
func CheckRubric(style string, items []Item, maxItems int) error {
	if vs := RubricViolations(style, items, maxItems); len(vs) > 0 {
		return vs[0].Err
	}
	return nil
}

// RubricViolations returns every rule of CheckRubric that items break: the
// item rules item by item, then the rubric-wide ones. An item breaks each
// rule at most once. It returns nil for a rubric that holds.
func RubricViolations(style string, items []Item, maxItems int) []RubricViolation {
	var allowed map[string]bool
	switch style {
	case StyleSRaR:
		allowed = srarTypes
	case StyleFactualProcess:
		allowed = map[string]bool{TypeFactual: true, TypeProcess: true}
	default:
		return []RubricViolation{{RuleStyle, parseErr(0, 0, "style", "unknown rubric style %q; the styles are %q and %q", style, StyleSRaR, StyleFactualProcess)}}
	}
	if len(items) == 0 {
		return []RubricViolation{{RuleNoItems, parseErr(0, 0, "", "the rubric has no items")}}
	}
	var out []RubricViolation
	counts := make(map[string]int)
	for k, it := range items {
		out = append(out, itemViolations(style, allowed, k+1, it)...)
		counts[it.Type]++
	}
	whole := func(rule, format string, args ...any) {
		out = append(out, RubricViolation{rule, parseErr(0, 0, "", format, args...)})
	}
	switch style {
	case StyleSRaR:
		if counts[TypeSuggest] == 0 {
			whole(RuleSuggest, "the rubric has no SUGGEST item; at least one is required")
		}
		if c := counts[TypeAnswer]; c != 1 {
			whole(RuleAnswerCount, "the rubric has %d ANSWER items; exactly one is required", c)
		}
		if maxItems > 0 && len(items) > maxItems {
			whole(RuleTooManyItems, "the rubric has %d items; at most %d are allowed", len(items), maxItems)
		}
	case StyleFactualProcess:
		if n := len(items); n < MinFactualProcessItems || n > MaxFactualProcessItems {
			whole(RuleItemCount, "the rubric has %d items; between %d and %d are required", n, MinFactualProcessItems, MaxFactualProcessItems)
		}
	}
	return out
}

// itemViolations checks the item at 1-based position n.
func itemViolations(style string, allowed map[string]bool, n int, it Item) []RubricViolation {
	var out []RubricViolation
	bad := func(rule, field, format string, args ...any) {
		out = append(out, RubricViolation{rule, parseErr(0, n, field, format, args...)})
	}
	if it.ID != int32(n) {
		bad(RuleItemID, "id", "is %d; ids must be 1..n in order", it.ID)
	}
	if !allowed[it.Type] {
		bad(RuleItemType, "type", "%q is not a %s item type", it.Type, style)
	}
	switch {
	case !utf8.ValidString(it.Text):
		bad(RuleItemText, "text", "is not valid UTF-8")
	case strings.TrimSpace(it.Text) == "":
		bad(RuleItemText, "text", "is blank")
	case style == StyleSRaR && strings.ContainsAny(it.Text, "\r\n"):
		bad(RuleItemText, "text", "has a line break; SRaR items are one line each")
	}
	if want := PolarityOf(it.Type); it.Polarity != want {
		bad(RulePolarity, "polarity", "is %d; a %s item has polarity %d", it.Polarity, it.Type, want)
	}
	switch {
	case math.IsNaN(it.Weight) || math.IsInf(it.Weight, 0) || it.Weight <= 0:
		bad(RuleWeight, "weight", "is %v; it must be a positive number", it.Weight)
	case style == StyleFactualProcess && (it.Weight != math.Trunc(it.Weight) || it.Weight < MinWeight || it.Weight > MaxWeight):
		bad(RuleWeight, "weight", "is %v; it must be an integer from %d to %d", it.Weight, MinWeight, MaxWeight)
	}
	if it.SatRate != nil && !(*it.SatRate >= 0 && *it.SatRate <= 1) {
		bad(RuleSatRate, "sat_rate", "is %v; it must be in [0, 1]", *it.SatRate)
	}
	if it.Corr != nil && !(*it.Corr >= -1 && *it.Corr <= 1) {
		bad(RuleCorr, "corr", "is %v; it must be in [-1, 1]", *it.Corr)
	}
	return out
}
