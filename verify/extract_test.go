package verify

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

type extractCase struct {
	line int
	ok   bool
	want string
	text string
}

func loadExtractCases(t *testing.T) []extractCase {
	t.Helper()
	f, err := os.Open("testdata/extract.tsv")
	if err != nil {
		t.Fatalf("open extract cases: %v", err)
	}
	defer f.Close()
	var out []extractCase
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.SplitN(line, "\t", 3)
		if len(cols) != 3 || (cols[0] != "0" && cols[0] != "1") {
			t.Fatalf("extract.tsv line %d: want 'ok<TAB>want<TAB>text', got %q", n, line)
		}
		out = append(out, extractCase{line: n, ok: cols[0] == "1", want: cols[1], text: unescapeNL(cols[2])})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read extract cases: %v", err)
	}
	return out
}

func TestExtractCases(t *testing.T) {
	cases := loadExtractCases(t)
	noAnswer := 0
	for _, c := range cases {
		got, ok := Extract(c.text)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("line %d: Extract(%q) = %q, %v; want %q, %v", c.line, c.text, got, ok, c.want, c.ok)
		}
		if !c.ok {
			noAnswer++
		}
	}
	t.Logf("%d extraction cases, %d without an answer", len(cases), noAnswer)
	if len(cases) < 60 {
		t.Errorf("only %d extraction cases, want at least 60", len(cases))
	}
	if noAnswer < 10 {
		t.Errorf("only %d ok=false extraction cases, want at least 10", noAnswer)
	}
}
