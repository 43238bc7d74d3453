package audit

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/internal/figures"
)

// Width is the widest line the text report writes.
const Width = 100

// table is an aligned text table. Columns are right-aligned unless named in
// left; when the table is wider than Width, the widest left-aligned
// column is cut with "…".
type table struct {
	head []string
	left map[int]bool
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head, left: map[int]bool{0: true}} }

// leftAlign marks more left-aligned columns (the first always is).
func (t *table) leftAlign(cols ...int) *table {
	for _, c := range cols {
		t.left[c] = true
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

const indent = "  "

func (t *table) write(w io.Writer) {
	widths := make([]int, len(t.head))
	measure := func(cells []string) {
		for i, c := range cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	measure(t.head)
	for _, r := range t.rows {
		measure(r)
	}
	t.fit(widths)
	last := len(widths) - 1
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString(indent)
		var more []string // continuation lines of a wrapped last column
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == last && t.left[i] {
				parts := wrap(c, widths[i])
				if len(parts) == 0 {
					parts = []string{""}
				}
				b.WriteString(parts[0])
				more = parts[1:]
				continue
			}
			c = cut(c, widths[i])
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if t.left[i] {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		lead := strings.Repeat(" ", len(indent)+2*last)
		for i := range last {
			lead += strings.Repeat(" ", widths[i])
		}
		for _, m := range more {
			fmt.Fprintln(w, lead+m)
		}
	}
	line(t.head)
	for _, r := range t.rows {
		line(r)
	}
}

// fit narrows the widest left-aligned column until the table fits Width.
func (t *table) fit(widths []int) {
	total := len(indent) + 2*(len(widths)-1)
	for _, w := range widths {
		total += w
	}
	for total > Width {
		widest := -1
		for i := range widths {
			if t.left[i] && widths[i] > 8 && (widest < 0 || widths[i] > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			return
		}
		widths[widest]--
		total--
	}
}

// cut shortens s to n runes, ending in "…" when it had more.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// clip shortens a free-text line to the report width.
func clip(s string) string { return cut(s, Width) }

// num formats n with thousands separators: 51,583.
func num(n int64) string { return figures.Int(n) }

// pct formats a rate as a percentage with one decimal, "-" for none.
func pct(r *float64) string {
	if r == nil {
		return "-"
	}
	return strconv.FormatFloat(100**r, 'f', 1, 64) + "%"
}

func pctOf(n, d int64) string { return pct(ratio(n, d)) }

// fix formats x with d decimals, "-" for nil.
func fix(x *float64, d int) string {
	if x == nil {
		return "-"
	}
	return strconv.FormatFloat(*x, 'f', d, 64)
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// bar is a run of '#' of length proportional to n / most, at most width.
func bar(n, most int64, width int) string {
	if most <= 0 || n <= 0 {
		return ""
	}
	return strings.Repeat("#", max(1, int(float64(width)*float64(n)/float64(most)+0.5)))
}
