package schema

import (
	"regexp"
	"strings"
)

// Bounds of a decomposition: how many finer items replace a saturated one.
const (
	MinDecomposedItems = 2
	MaxDecomposedItems = 3
)

// decomposedLineRE is one line of a decomposition: an optional bullet, a
// <<TYPE>> tag, an optional colon, the text.
var decomposedLineRE = regexp.MustCompile(`^(?:[-*+•]\s*|\d+[.)]\s*)?<<\s*([A-Za-z_]+)\s*>>\s*[:：]?\s*(.*)$`)

// ParseDecomposed reads the finer items that replace a saturated item of
// type itemType (the decompose template's reply): 2 or 3 lines, each
// "<<TYPE>>: text" with the saturated item's type. Blank lines are
// skipped; any other line, another type, an empty text or two equal
// texts are errors naming the line. Items get ids 1..n, weight 1 and the
// type's polarity.
func ParseDecomposed(text, itemType string) ([]Item, error) {
	want := strings.ToUpper(strings.TrimSpace(itemType))
	var items []Item
	seen := map[string]int{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		m := decomposedLineRE.FindStringSubmatch(line)
		if m == nil {
			return nil, parseErr(n+1, 0, "", "the line does not start with <<%s>>: every line is one finer item", want)
		}
		typ, body := strings.ToUpper(m[1]), strings.Join(strings.Fields(m[2]), " ")
		switch {
		case typ != want:
			return nil, parseErr(n+1, len(items)+1, "type", "the item is tagged <<%s>>; the finer items keep the saturated item's type <<%s>>", typ, want)
		case body == "":
			return nil, parseErr(n+1, len(items)+1, "text", "the item has no text")
		}
		if prev, dup := seen[strings.ToLower(body)]; dup {
			return nil, parseErr(n+1, len(items)+1, "text", "the item repeats item %d", prev)
		}
		items = append(items, Item{ID: int32(len(items) + 1), Type: want, Text: body, Weight: 1, Polarity: PolarityOf(want)})
		seen[strings.ToLower(body)] = len(items)
	}
	if len(items) < MinDecomposedItems || len(items) > MaxDecomposedItems {
		return nil, parseErr(0, 0, "", "the reply has %d items; write between %d and %d lines, each <<%s>>: text", len(items), MinDecomposedItems, MaxDecomposedItems, want)
	}
	return items, nil
}
