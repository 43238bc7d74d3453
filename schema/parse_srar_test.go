package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
)

// item is shorthand for an SRaR item as ParseSRaR builds it.
func item(id int32, typ, text string) Item {
	return Item{ID: id, Type: typ, Text: text, Weight: 1, Polarity: PolarityOf(typ)}
}

func TestParseSRaRGood(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		opt   SRaROptions
		want  []Item
		dupes int
	}{
		{
			name: "canonical",
			in:   "<<SUGGEST>>: Factors 91 as 7·13.\n<<ANSWER>>: Final answer equals 20.",
			want: []Item{item(1, TypeSuggest, "Factors 91 as 7·13."), item(2, TypeAnswer, "Final answer equals 20.")},
		},
		{
			name: "lower case, no colon, single brackets, square brackets",
			in:   "<<suggest>> a\n<Suggest>: b\n[SUGGEST] c\n[[pitfall]]: d\n<answer> e",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeSuggest, "b"), item(3, TypeSuggest, "c"), item(4, TypePitfall, "d"), item(5, TypeAnswer, "e")},
		},
		{
			name: "bullets and numbers",
			in:   "- <<SUGGEST>>: a\n* <<SUGGEST>>: b\n+ <<SUGGEST>>: c\n1. <<SUGGEST>>: d\n2) <<BONUS>>: e\n(3) <<PITFALL>>: f\n• <<SUGGEST>>: g\n-<<ANSWER>>: h",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeSuggest, "b"), item(3, TypeSuggest, "c"), item(4, TypeSuggest, "d"),
				item(5, TypeBonus, "e"), item(6, TypePitfall, "f"), item(7, TypeSuggest, "g"), item(8, TypeAnswer, "h")},
		},
		{
			name: "bold and italic markers",
			in:   "**<<SUGGEST>>**: a\n**<<SUGGEST>>:** b\n**<<SUGGEST>>: c**\n*<<SUGGEST>>*: d\n__<<PITFALL>>__ e\n<<SUGGEST>>: **f** matters\n- **<<ANSWER>>**: g",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeSuggest, "b"), item(3, TypeSuggest, "c"), item(4, TypeSuggest, "d"),
				item(5, TypePitfall, "e"), item(6, TypeSuggest, "**f** matters"), item(7, TypeAnswer, "g")},
		},
		{
			name: "code fence with language, blank lines, trailing white space, CRLF",
			in:   "```text\r\n\r\n<<SUGGEST>>: a  \r\n\r\n<<ANSWER>>: b\t\r\n```\r\n",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeAnswer, "b")},
		},
		{
			name: "closing tags at line end",
			in:   "<<SUGGEST>>: a<</SUGGEST>>\n<<ANSWER>>: 42 <</answer>>\n<SUGGEST> c </SUGGEST>",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeAnswer, "42"), item(3, TypeSuggest, "c")},
		},
		{
			name: "closing tag at the end of a continuation",
			in:   "<<SUGGEST>>: a\nb <</SUGGEST>>\n<<ANSWER>>: c\n<</ANSWER>>",
			want: []Item{item(1, TypeSuggest, "a b"), item(2, TypeAnswer, "c")},
		},
		{
			name: "rollout-style answer tag",
			in:   "<<SUGGEST>>: a\n<<answer>>37<</answer>>",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeAnswer, "37")},
		},
		{
			name: "continuation lines join with a space",
			in:   "<<SUGGEST>>: Splits into the cases\n  x > 0 and\n  x < 0.\n<<ANSWER>>: 3",
			want: []Item{item(1, TypeSuggest, "Splits into the cases x > 0 and x < 0."), item(2, TypeAnswer, "3")},
		},
		{
			name: "continuation that starts with a bullet or a bracket",
			in:   "<<SUGGEST>>: Checks both cases:\n- x = 1\n[x] denotes the floor\n<<ANSWER>>: 3",
			want: []Item{item(1, TypeSuggest, "Checks both cases: - x = 1 [x] denotes the floor"), item(2, TypeAnswer, "3")},
		},
		{
			name: "text with angle brackets and inner tags is kept",
			in:   "<<SUGGEST>>: Shows 0 < x < 1 and <v, w> = 0.\n<<ANSWER>>: the value inside <<answer>> tags equals 1/2",
			want: []Item{item(1, TypeSuggest, "Shows 0 < x < 1 and <v, w> = 0."), item(2, TypeAnswer, "the value inside <<answer>> tags equals 1/2")},
		},
		{
			name: "interior white space collapsed",
			in:   "<<SUGGEST>>:   a \t  b\n<<ANSWER>>:c",
			want: []Item{item(1, TypeSuggest, "a b"), item(2, TypeAnswer, "c")},
		},
		{
			name:  "duplicates dropped before the limit",
			in:    "<<SUGGEST>>: a\n<<SUGGEST>>: a\n<<SUGGEST>>:  a \n<<SUGGEST>>: b\n<<ANSWER>>: c",
			opt:   SRaROptions{MaxItems: 3},
			want:  []Item{item(1, TypeSuggest, "a"), item(2, TypeSuggest, "b"), item(3, TypeAnswer, "c")},
			dupes: 2,
		},
		{
			name: "same text, different type is not a duplicate; case matters",
			in:   "<<SUGGEST>>: a\n<<BONUS>>: a\n<<SUGGEST>>: A\n<<ANSWER>>: c",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeBonus, "a"), item(3, TypeSuggest, "A"), item(4, TypeAnswer, "c")},
		},
		{
			name: "exactly the default limit",
			in:   strings.Repeat("<<SUGGEST>>: s\n", 1) + manyLines(TypeSuggest, 10) + "<<ANSWER>>: a\n",
			want: append(append([]Item{item(1, TypeSuggest, "s")}, manyItems(2, TypeSuggest, 10)...), item(12, TypeAnswer, "a")),
		},
		{
			name: "think block skipped",
			in:   "<think>\n<<HINT>>: draft\n</think>\n<<SUGGEST>>: a\n<<ANSWER>>: b",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeAnswer, "b")},
		},
		{
			name: "fullwidth colon",
			in:   "<<SUGGEST>>：a\n<<ANSWER>>: b",
			want: []Item{item(1, TypeSuggest, "a"), item(2, TypeAnswer, "b")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSRaR(tt.in, tt.opt)
			if err != nil {
				t.Fatalf("ParseSRaR: %v", err)
			}
			assertItems(t, got.Items, tt.want)
			if got.Duplicates != tt.dupes {
				t.Errorf("Duplicates = %d, want %d", got.Duplicates, tt.dupes)
			}
			if err := CheckRubric(StyleSRaR, got.Items, tt.opt.MaxItems); err != nil {
				t.Errorf("CheckRubric: %v", err)
			}
		})
	}
}

func manyLines(typ string, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("<<" + typ + ">>: item " + string(rune('a'+i)) + "\n")
	}
	return b.String()
}

func manyItems(first int32, typ string, n int) []Item {
	var out []Item
	for i := range n {
		out = append(out, item(first+int32(i), typ, "item "+string(rune('a'+i))))
	}
	return out
}

func assertItems(t *testing.T, got, want []Item) {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) != string(w) {
		t.Errorf("items:\n got %s\nwant %s", g, w)
	}
}

func TestParseSRaRBad(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opt  SRaROptions
		want ParseError
	}{
		{"empty reply", "", SRaROptions{}, ParseError{Msg: "no rubric lines"}},
		{"only fences and blanks", "```\n\n```\n", SRaROptions{}, ParseError{Msg: "no rubric lines"}},
		{"unknown tag", "<<SUGGEST>>: a\n<<HINT>>: b\n<<ANSWER>>: c", SRaROptions{}, ParseError{Line: 2, Msg: "unknown tag <<HINT>>"}},
		{"unknown tag single bracket", "<<SUGGEST>>: a\n\n<Note>: b", SRaROptions{}, ParseError{Line: 3, Msg: "unknown tag <Note>"}},
		{"factual tag in srar", "<<FACTUAL>>: a", SRaROptions{}, ParseError{Line: 1, Msg: "unknown tag"}},
		{"preamble", "Here is the rubric:\n<<SUGGEST>>: a\n<<ANSWER>>: b", SRaROptions{}, ParseError{Line: 1, Msg: "text before the first rubric tag"}},
		{"preamble after fence", "```\n\nRubric\n<<SUGGEST>>: a", SRaROptions{}, ParseError{Line: 3, Msg: "text before the first rubric tag"}},
		{"markdown heading", "### Rubric\n<<SUGGEST>>: a", SRaROptions{}, ParseError{Line: 1, Msg: "text before the first rubric tag"}},
		{"bare tag word", "SUGGEST: a\nANSWER: b", SRaROptions{}, ParseError{Line: 1, Msg: "text before the first rubric tag"}},
		{"trailing commentary after blank", "<<SUGGEST>>: a\n<<ANSWER>>: b\n\nThat is all.", SRaROptions{}, ParseError{Line: 4, Msg: "text outside a rubric item"}},
		{"text after closing tag line", "<<SUGGEST>>\na\n<</SUGGEST>>\nmore", SRaROptions{}, ParseError{Line: 4, Msg: "text outside a rubric item"}},
		{"text after same-line closing tag", "<<SUGGEST>>: a<</SUGGEST>>\nmore", SRaROptions{}, ParseError{Line: 2, Msg: "text outside a rubric item"}},
		{"empty item", "<<SUGGEST>>:\n<<ANSWER>>: b", SRaROptions{}, ParseError{Line: 1, Item: 1, Msg: "has no text"}},
		{"empty item only markers", "<<SUGGEST>>: a\n**<<BONUS>>:**  \n<<ANSWER>>: b", SRaROptions{}, ParseError{Line: 2, Item: 2, Msg: "<<BONUS>> item has no text"}},
		{"empty item before blank", "<<SUGGEST>>\n\na\n<<ANSWER>>: b", SRaROptions{}, ParseError{Line: 3, Msg: "text outside a rubric item"}},
		{"empty last item", "<<SUGGEST>>: a\n<<ANSWER>>", SRaROptions{}, ParseError{Line: 2, Item: 2, Msg: "has no text"}},
		{"no suggest", "<<PITFALL>>: a\n<<ANSWER>>: b", SRaROptions{}, ParseError{Msg: "no <<SUGGEST>> item"}},
		{"no answer", "<<SUGGEST>>: a\n<<BONUS>>: b", SRaROptions{}, ParseError{Msg: "no <<ANSWER>> item"}},
		{"two answers", "<<SUGGEST>>: a\n<<ANSWER>>: 3\n<<ANSWER>>: 4", SRaROptions{}, ParseError{Msg: "2 different <<ANSWER>> items (lines 2 and 3)"}},
		{"too many", manyLines(TypeSuggest, 12) + "<<ANSWER>>: a", SRaROptions{}, ParseError{Msg: "13 items; at most 12"}},
		{"too many custom", manyLines(TypeSuggest, 3) + "<<ANSWER>>: a", SRaROptions{MaxItems: 3}, ParseError{Msg: "4 items; at most 3"}},
		{"mismatched closing tag", "<<SUGGEST>>: a <</ANSWER>>", SRaROptions{}, ParseError{Line: 1, Msg: "closing tag <</ANSWER>> does not match the open <<SUGGEST>> item"}},
		{"mismatched closing tag on a continuation", "<<SUGGEST>>: a\nb </AA>", SRaROptions{}, ParseError{Line: 2, Msg: "closing tag </AA> does not match"}},
		{"text after a continuation closed", "<<SUGGEST>>: a\nb <</SUGGEST>>\nc", SRaROptions{}, ParseError{Line: 3, Msg: "text outside a rubric item"}},
		{"closing tag line mismatch", "<<SUGGEST>>\na\n<</PITFALL>>", SRaROptions{}, ParseError{Line: 3, Msg: "does not match the open <<SUGGEST>> item"}},
		{"stray closing tag", "<</SUGGEST>>\n<<SUGGEST>>: a", SRaROptions{}, ParseError{Line: 1, Msg: "does not follow an item"}},
		{"text after closing tag on the line", "<<SUGGEST>>\na\n<</SUGGEST>> b", SRaROptions{}, ParseError{Line: 3, Msg: "text after the closing tag"}},
		{"two items on one line", "<<SUGGEST>>: a <<PITFALL>>: b\n<<ANSWER>>: c", SRaROptions{}, ParseError{Line: 1, Msg: "second tag <<PITFALL>>"}},
		{"two items on a continuation line", "<<SUGGEST>>: a\nb <<ANSWER>>: c", SRaROptions{}, ParseError{Line: 2, Msg: "second tag <<ANSWER>>"}},
		{"unclosed think", "<think>\nhmm\n<<SUGGEST>>: a", SRaROptions{}, ParseError{Line: 1, Msg: "never closed"}},
		{"line numbers count the think block", "<think>x</think>\n\nhello", SRaROptions{}, ParseError{Line: 3, Msg: "text before the first rubric tag"}},
		{"invalid utf-8", "<<SUGGEST>>: a\n<<ANSWER>>: \xff", SRaROptions{}, ParseError{Line: 2, Msg: "not valid UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSRaR(tt.in, tt.opt)
			assertParseError(t, err, tt.want)
			if err != nil && (got.Items != nil || got.Duplicates != 0) {
				t.Errorf("result not zero on error: %+v", got)
			}
		})
	}
}

// assertParseError checks that err is a *ParseError with want's Line, Item
// and Field, whose Msg contains want.Msg.
func assertParseError(t *testing.T, err error, want ParseError) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want.Msg)
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	if pe.Line != want.Line || pe.Item != want.Item || pe.Field != want.Field || !strings.Contains(pe.Msg, want.Msg) {
		t.Errorf("got  %#v\nwant line %d item %d field %q msg containing %q", *pe, want.Line, want.Item, want.Field, want.Msg)
	}
}

func TestParseSRaRCallerErrors(t *testing.T) {
	_, err := ParseSRaR("<<SUGGEST>>: a\n<<ANSWER>>: b", SRaROptions{MaxItems: -1})
	var pe *ParseError
	if err == nil || errors.As(err, &pe) {
		t.Fatalf("negative MaxItems: got %v, want a plain error", err)
	}
}

// TestParseSRaRFiles parses the model outputs in testdata/srar. good_*.txt
// must parse to their .golden.json; bad_*.txt must fail as listed here.
func TestParseSRaRFiles(t *testing.T) {
	bad := map[string]ParseError{
		"bad_preamble.txt":            {Line: 1, Msg: "text before the first rubric tag: \"Here is the rubric"},
		"bad_trailing_commentary.txt": {Line: 5, Msg: "text outside a rubric item: \"These items"},
		"bad_truncated_think.txt":     {Line: 1, Msg: "<think> block that is never closed"},
	}
	files, err := filepath.Glob("testdata/srar/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseSRaR(string(in), SRaROptions{})
			if strings.HasPrefix(name, "bad_") {
				want, ok := bad[name]
				if !ok {
					t.Fatalf("no expectation for %s", name)
				}
				assertParseError(t, err, want)
				return
			}
			if err != nil {
				t.Fatalf("ParseSRaR: %v", err)
			}
			if err := CheckRubric(StyleSRaR, got.Items, DefaultMaxItems); err != nil {
				t.Errorf("CheckRubric: %v", err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".txt")+".golden.json", got)
		})
	}
}

func checkGolden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, path, append(got, '\n'))
}

func TestParseErrorMessage(t *testing.T) {
	tests := []struct {
		e    ParseError
		want string
	}{
		{ParseError{Msg: "m"}, "m"},
		{ParseError{Line: 3, Msg: "m"}, "line 3: m"},
		{ParseError{Item: 2, Msg: "m"}, "item 2: m"},
		{ParseError{Field: "weight", Msg: "m"}, `field "weight": m`},
		{ParseError{Line: 3, Item: 2, Field: "weight", Msg: "m"}, `line 3, item 2, field "weight": m`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

func BenchmarkParseSRaR(b *testing.B) {
	in, err := os.ReadFile("testdata/srar/good_mixed_messy.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := ParseSRaR(string(in), SRaROptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
