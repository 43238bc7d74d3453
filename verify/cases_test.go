package verify

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

type equalCase struct {
	line       int
	want       bool
	gold, pred string
	note       string
}

// loadEqualCases reads testdata/equal.tsv: want, gold, pred and an optional note per line.
func loadEqualCases(t *testing.T) []equalCase {
	t.Helper()
	f, err := os.Open("testdata/equal.tsv")
	if err != nil {
		t.Fatalf("open equal cases: %v", err)
	}
	defer f.Close()
	var out []equalCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 || (cols[0] != "0" && cols[0] != "1") {
			t.Fatalf("equal.tsv line %d: want 'want<TAB>gold<TAB>pred', got %q", n, line)
		}
		c := equalCase{line: n, want: cols[0] == "1", gold: unescapeNL(cols[1]), pred: unescapeNL(cols[2])}
		if len(cols) > 3 {
			c.note = cols[3]
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read equal cases: %v", err)
	}
	return out
}

func unescapeNL(s string) string { return strings.ReplaceAll(s, "⏎", "\n") }

func TestEqualCases(t *testing.T) {
	cases := loadEqualCases(t)
	for _, c := range cases {
		res := Compare(c.gold, c.pred)
		if res.Equal != c.want {
			t.Errorf("line %d: Compare(%q, %q).Equal = %v, want %v (method %s, gold %q, pred %q, reason %q) %s",
				c.line, c.gold, c.pred, res.Equal, c.want, res.Method, res.Gold, res.Pred, res.Reason, c.note)
		}
		if got := Equal(c.gold, c.pred); got != res.Equal {
			t.Errorf("line %d: Equal and Compare disagree", c.line)
		}
	}
}

func TestEqualCaseCounts(t *testing.T) {
	cases := loadEqualCases(t)
	notEqual := 0
	for _, c := range cases {
		if !c.want {
			notEqual++
		}
	}
	share := float64(notEqual) / float64(len(cases))
	t.Logf("%d equivalence cases, %d must-not-equal (%.0f%%)", len(cases), notEqual, 100*share)
	if len(cases) < 300 {
		t.Errorf("only %d equivalence cases, want at least 300", len(cases))
	}
	if share < 0.30 {
		t.Errorf("only %.0f%% of the cases are not-equal pairs, want at least 30%%", 100*share)
	}
}
