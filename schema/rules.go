package schema

import (
	"math"
	"strings"
	"unicode/utf8"
)

// CheckRubric checks the structural rules a rubric of the given style must
// satisfy, and returns the first violation as a *ParseError naming the item
// (by position) and the field. It is what the pipeline runs after parsing and
// what `validate` runs over a corpus.
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
	var allowed map[string]bool
	switch style {
	case StyleSRaR:
		allowed = srarTypes
	case StyleFactualProcess:
		allowed = map[string]bool{TypeFactual: true, TypeProcess: true}
	default:
		return parseErr(0, 0, "style", "unknown rubric style %q; the styles are %q and %q", style, StyleSRaR, StyleFactualProcess)
	}
	if len(items) == 0 {
		return parseErr(0, 0, "", "the rubric has no items")
	}
	counts := make(map[string]int)
	for k, it := range items {
		n := k + 1
		bad := func(field, format string, args ...any) error {
			return parseErr(0, n, field, format, args...)
		}
		if it.ID != int32(n) {
			return bad("id", "is %d; ids must be 1..n in order", it.ID)
		}
		if !allowed[it.Type] {
			return bad("type", "%q is not a %s item type", it.Type, style)
		}
		if !utf8.ValidString(it.Text) {
			return bad("text", "is not valid UTF-8")
		}
		if strings.TrimSpace(it.Text) == "" {
			return bad("text", "is blank")
		}
		if style == StyleSRaR && strings.ContainsAny(it.Text, "\r\n") {
			return bad("text", "has a line break; SRaR items are one line each")
		}
		if want := PolarityOf(it.Type); it.Polarity != want {
			return bad("polarity", "is %d; a %s item has polarity %d", it.Polarity, it.Type, want)
		}
		if math.IsNaN(it.Weight) || math.IsInf(it.Weight, 0) || it.Weight <= 0 {
			return bad("weight", "is %v; it must be a positive number", it.Weight)
		}
		if style == StyleFactualProcess && (it.Weight != math.Trunc(it.Weight) || it.Weight < MinWeight || it.Weight > MaxWeight) {
			return bad("weight", "is %v; it must be an integer from %d to %d", it.Weight, MinWeight, MaxWeight)
		}
		if it.SatRate != nil && !(*it.SatRate >= 0 && *it.SatRate <= 1) {
			return bad("sat_rate", "is %v; it must be in [0, 1]", *it.SatRate)
		}
		if it.Corr != nil && !(*it.Corr >= -1 && *it.Corr <= 1) {
			return bad("corr", "is %v; it must be in [-1, 1]", *it.Corr)
		}
		counts[it.Type]++
	}
	switch style {
	case StyleSRaR:
		if counts[TypeSuggest] == 0 {
			return parseErr(0, 0, "", "the rubric has no SUGGEST item; at least one is required")
		}
		if c := counts[TypeAnswer]; c != 1 {
			return parseErr(0, 0, "", "the rubric has %d ANSWER items; exactly one is required", c)
		}
		if maxItems > 0 && len(items) > maxItems {
			return parseErr(0, 0, "", "the rubric has %d items; at most %d are allowed", len(items), maxItems)
		}
	case StyleFactualProcess:
		if n := len(items); n < MinFactualProcessItems || n > MaxFactualProcessItems {
			return parseErr(0, 0, "", "the rubric has %d items; between %d and %d are required", n, MinFactualProcessItems, MaxFactualProcessItems)
		}
	}
	return nil
}
