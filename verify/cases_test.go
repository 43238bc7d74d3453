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

// loadEqualCases reads testdata/equal.tsv; see loadEqualTable.
func loadEqualCases(t *testing.T) []equalCase { return loadEqualTable(t, "testdata/equal.tsv") }

// loadEqualTable reads a table of want, gold, pred and an optional note per line.
func loadEqualTable(t *testing.T, path string) []equalCase {
	var out []equalCase
	for _, r := range tsvRows(t, path, "want<TAB>gold<TAB>pred", 3, -1) {
		c := equalCase{line: r.line, want: r.cols[0] == "1", gold: unescapeNL(r.cols[1]), pred: unescapeNL(r.cols[2])}
		if len(r.cols) > 3 {
			c.note = r.cols[3]
		}
		out = append(out, c)
	}
	return out
}

// tsvRow is one case of a test table and its line number.
type tsvRow struct {
	line int
	cols []string
}

// tsvRows reads a test table: tab-separated columns, at most split of them
// (-1: no bound), blank lines and '#' comments skipped. A row with fewer than
// min columns, or whose first column is not 0 or 1, fails the test.
func tsvRows(t *testing.T, path, shape string, min, split int) []tsvRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var out []tsvRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.SplitN(line, "\t", split)
		if len(cols) < min || (cols[0] != "0" && cols[0] != "1") {
			t.Fatalf("%s line %d: want '%s', got %q", path, n, shape, line)
		}
		out = append(out, tsvRow{line: n, cols: cols})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return out
}

func unescapeNL(s string) string { return strings.ReplaceAll(s, "⏎", "\n") }

func TestEqualCases(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
