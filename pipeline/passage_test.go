package pipeline

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutPassages(t *testing.T) {
	long := strings.Repeat("word ", 30) // 150 characters
	for _, tc := range []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"blank", " \n\n\t\n", 100, nil},
		{"one short paragraph", "  Alpha beta.  \n", 100, []string{"Alpha beta."}},
		{"paragraphs packed while they fit", "One two.\n\nThree four.\n\n\nFive six.", 24,
			[]string{"One two.\n\nThree four.", "Five six."}},
		{"exactly at the limit", "abcd\n\nefgh", 10, []string{"abcd\n\nefgh"}},
		{"one over the limit", "abcd\n\nefghi", 10, []string{"abcd", "efghi"}},
		{"CRLF line ends and lines inside a paragraph", "line one\r\nline two\r\n\r\nnext", 100,
			[]string{"line one\nline two\n\nnext"}},
		{"a long paragraph at sentence ends", "First sentence here. Second one is here! Third? Last bit.", 30,
			[]string{"First sentence here.", "Second one is here! Third?", "Last bit."}},
		{"no cut after an initial or e.g.", "See J. Smith for e.g. this case. Then more text follows here.", 40,
			[]string{"See J. Smith for e.g. this case.", "Then more text follows here."}},
		{"closing quote after the full stop", `He said "stop." Then he left the room quietly.`, 20,
			[]string{`He said "stop."`, "Then he left the", "room quietly."}},
		{"a long sentence at white space", strings.TrimSpace(long), 40, []string{
			"word word word word word word word word", "word word word word word word word word",
			"word word word word word word word word", "word word word word word word"}},
		{"one word over the limit stays whole", "tiny " + strings.Repeat("x", 50) + " end", 10,
			[]string{"tiny", strings.Repeat("x", 50), "end"}},
		{"limit counts characters, not bytes", "äöü äöü äöü", 7, []string{"äöü äöü", "äöü"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CutPassages(tc.text, tc.limit)
			if !slices.Equal(got, tc.want) {
				t.Errorf("CutPassages(%q, %d)\n got %q\nwant %q", tc.text, tc.limit, got, tc.want)
			}
			checkPassages(t, tc.text, tc.limit, got)
		})
	}
}

// checkPassages asserts what a user of the passages relies on: every word
// of the text is in them in order, none is cut, and none is over the limit
// unless it is one word.
func checkPassages(t *testing.T, text string, limit int, ps []string) {
	t.Helper()
	if !slices.Equal(strings.Fields(strings.Join(ps, " ")), strings.Fields(text)) {
		t.Fatalf("the passages do not hold the text's words in order:\n text %q\n got %q", text, ps)
	}
	for _, p := range ps {
		if p == "" || strings.TrimSpace(p) != p {
			t.Fatalf("passage %q is empty or not trimmed", p)
		}
		if utf8.RuneCountInString(p) > limit && len(strings.Fields(p)) != 1 {
			t.Fatalf("passage of %d characters over the limit %d: %q", utf8.RuneCountInString(p), limit, p)
		}
	}
}

func FuzzCutPassages(f *testing.F) {
	f.Add("A first paragraph. With two sentences!\n\nA second one, longer than the first, with more words in it.", 30)
	f.Add(strings.Repeat("x", 300)+" y", 20)
	f.Add("a\u00a0b\u2003c. D\u3000e", 3)
	f.Add("\xff\xfe bad bytes. more", 5)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if !utf8.ValidString(text) {
			return // documents are checked for UTF-8 before they are cut
		}
		limit = 1 + abs(limit)%400
		checkPassages(t, text, limit, CutPassages(text, limit))
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// BenchmarkCutPassages cuts a 1 MB paragraph without sentence ends into
// 400-character passages: linear in the text, not in the number of cuts.
func BenchmarkCutPassages(b *testing.B) {
	text := strings.Repeat("word ", 200_000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		CutPassages(text, 400)
	}
}
