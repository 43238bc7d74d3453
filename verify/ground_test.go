package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// groundCorpus is the must-still-find corpus of the cut-off rule (issue 38 item 9): finished
// and cut-off generations in the shapes reasoning models write, each with what extraction
// must give and whether it verifies against its ground truth. See testdata/ground/README.md.
const groundCorpus = "testdata/ground/corpus.jsonl"

// groundCase is one generation of the corpus.
type groundCase struct {
	line    int
	Shape   string  `json:"shape"`
	Finish  string  `json:"finish_reason"`
	Gold    string  `json:"gold"`
	Extract *string `json:"extract"` // nil: no answer may be found
	Verdict *bool   `json:"verdict"`
	Text    string  `json:"text"`
}

// state is the part of a shape tag before its slash: "fin" (the model ended its text), "cut"
// (the text was cut off before it gave its answer) or "kept" (cut off after a clearly given
// answer, which stands).
func (c groundCase) state() string {
	s, _, _ := strings.Cut(c.Shape, "/")
	return s
}

func loadGroundCorpus(t testing.TB) []groundCase {
	t.Helper()
	data, err := os.ReadFile(groundCorpus)
	if err != nil {
		t.Fatalf("read %s: %v", groundCorpus, err)
	}
	var out []groundCase
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		c := groundCase{line: n}
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s line %d: %v", groundCorpus, n, err)
		}
		switch {
		case c.Shape == "" || c.Gold == "" || c.Text == "" || c.Verdict == nil:
			t.Fatalf("%s line %d: shape, gold, verdict and text are required", groundCorpus, n)
		case c.state() == "cut" && (c.Extract != nil || *c.Verdict):
			t.Fatalf("%s line %d: a cut/ case has no answer (extract null) and never verifies", groundCorpus, n)
		case (c.state() == "fin" || c.state() == "kept") && c.Extract == nil:
			t.Fatalf("%s line %d: a %s/ case names the answer it must give", groundCorpus, n, c.state())
		case c.state() != "cut" && c.state() != "fin" && c.state() != "kept":
			t.Fatalf("%s line %d: shape %q: want fin/..., cut/... or kept/...", groundCorpus, n, c.Shape)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", groundCorpus, err)
	}
	return out
}

// groundOutcome is how one case fared: whether extraction gave what the case says (its
// answer, or none), whether the verdict against the gold is the case's, and why not.
type groundOutcome struct {
	extractOK, verdictOK bool
	problem              string
}

func runGroundCase(c groundCase) groundOutcome {
	opt := Options{FinishReason: c.Finish}
	got, method, ok := ExtractWith(c.Text, opt)
	o := groundOutcome{extractOK: true, verdictOK: true}
	var why []string
	switch {
	case c.Extract == nil && ok:
		o.extractOK = false
		why = append(why, fmt.Sprintf("extracted %q (%s), want no answer", got, method))
	case c.Extract != nil && !ok:
		o.extractOK = false
		why = append(why, fmt.Sprintf("no answer (%s), want %q", extract(c.Text, opt).cut, *c.Extract))
	case c.Extract != nil && !Equal(*c.Extract, got):
		o.extractOK = false
		why = append(why, fmt.Sprintf("extracted %q (%s), want %q", got, method, *c.Extract))
	}
	if c.Finish == "" {
		if a, m, ok2 := ExtractMethod(c.Text); a != got || m != method || ok2 != ok {
			o.extractOK = false
			why = append(why, "ExtractMethod and ExtractWith with no finish reason disagree")
		}
	}
	res := CompareWith(c.Gold, c.Text, opt)
	if res.Equal != *c.Verdict {
		o.verdictOK = false
		why = append(why, fmt.Sprintf("CompareWith(%q) equal = %v, want %v (%s %s)", c.Gold, res.Equal, *c.Verdict, res.Method, res.Reason))
	}
	o.problem = strings.Join(why, "; ")
	return o
}

// groundTally counts a shape's cases and how many of them came out right.
type groundTally struct{ n, extract, verdict int }

func (g *groundTally) add(o groundOutcome) {
	g.n++
	if o.extractOK {
		g.extract++
	}
	if o.verdictOK {
		g.verdict++
	}
}

func pct(k, n int) string { return fmt.Sprintf("%5.1f%%", 100*float64(k)/float64(max(n, 1))) }

// TestGroundCorpus is the must-still-find test of the cut-off rule, in both directions: every
// finished case ("fin/") still gives its answer and its verdict, every case cut off before its
// answer ("cut/") gives no answer and never verifies, and every case cut off after a clearly
// given answer ("kept/") still gives it. Failures are listed by shape tag; with -v the test
// prints the extraction and verification rates by shape.
func TestGroundCorpus(t *testing.T) {
	t.Parallel()
	cases := loadGroundCorpus(t)
	byShape := map[string]*groundTally{}
	byState := map[string]*groundTally{}
	var all groundTally
	failures := map[string][]string{}
	for _, c := range cases {
		o := runGroundCase(c)
		tally(byShape, c.Shape).add(o)
		tally(byState, c.state()).add(o)
		all.add(o)
		if o.problem != "" {
			failures[c.Shape] = append(failures[c.Shape], fmt.Sprintf("line %d: %s⏎    text %q", c.line, o.problem, c.Text))
		}
	}
	t.Log("\n" + groundTable(byShape, byState, all))
	shapes := make([]string, 0, len(failures))
	for s := range failures {
		shapes = append(shapes, s)
	}
	sort.Strings(shapes)
	for _, s := range shapes {
		t.Errorf("shape %s: %d of %d cases wrong:\n  %s", s, len(failures[s]), byShape[s].n,
			strings.ReplaceAll(strings.Join(failures[s], "\n  "), "⏎", "\n"))
	}
	none := byState["cut"]
	if len(cases) < 300 || none == nil || 3*none.n < len(cases) {
		t.Errorf("the corpus has %d cases; want at least 300, a third of them cut off before their answer", len(cases))
	}
}

// tally is m's count for key, made on first use.
func tally(m map[string]*groundTally, key string) *groundTally {
	if m[key] == nil {
		m[key] = &groundTally{}
	}
	return m[key]
}

// groundTable prints the rates by shape, then by state, then overall.
func groundTable(byShape, byState map[string]*groundTally, all groundTally) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %5s %10s %10s\n", "shape", "cases", "extraction", "verdict")
	row := func(name string, g groundTally) {
		fmt.Fprintf(&b, "%-34s %5d %10s %10s\n", name, g.n, pct(g.extract, g.n), pct(g.verdict, g.n))
	}
	for _, group := range []map[string]*groundTally{byShape, byState} {
		keys := make([]string, 0, len(group))
		for k := range group {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			row(k, *group[k])
		}
		b.WriteString("\n")
	}
	row("all", all)
	return b.String()
}
