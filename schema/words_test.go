package schema

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// wordsByUnicode is words as it was before its ASCII path: the reference
// the fast path must agree with on every input.
func wordsByUnicode(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

var wordsCases = []string{
	"", " ", "word", "Two Words", "  lead and trail  ", "The 3 Laws, of motion: F=ma!",
	"tab\tnew\nline\r\nend", "hyphen-ated_under_score", "x1y2 Z3", "ALL CAPS 42",
	"naïve café", "Straße İstanbul", "ÀB cd", "mixed ascii and ünïcödé", "\x00ctl\x7fdel",
	"tokens\xffinvalid utf8", "日本語 text",
}

func TestWordsMatchesUnicodeSplit(t *testing.T) {
	for _, text := range wordsCases {
		if got, want := words(text), wordsByUnicode(text); !slices.Equal(got, want) {
			t.Errorf("words(%q) = %q, want %q", text, got, want)
		}
	}
}

func FuzzWords(f *testing.F) {
	for _, text := range wordsCases {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := words(text), wordsByUnicode(text); !slices.Equal(got, want) {
			t.Errorf("words(%q) = %q, want %q", text, got, want)
		}
	})
}

// lastIndexCases: a close absent, once, twice, at either end, overlapping
// itself.
var lastIndexCases = []struct{ s, sub string }{
	{"", "</think>"}, {`{"a":1}`, "</think>"}, {"x</think>y", "</think>"},
	{"</think>a</think>b", "</think>"}, {"a</think>", "</think>"}, {"</think>", "</think>"},
	{"aaaa", "aa"}, {"abab", "aba"}, {"<|channel|>final<|message|>x", "<|channel|>final<|message|>"},
}

func TestLastIndexMatchesStrings(t *testing.T) {
	for _, c := range lastIndexCases {
		if got, want := lastIndex(c.s, c.sub), strings.LastIndex(c.s, c.sub); got != want {
			t.Errorf("lastIndex(%q, %q) = %d, want %d", c.s, c.sub, got, want)
		}
	}
}

func FuzzLastIndex(f *testing.F) {
	for _, c := range lastIndexCases {
		f.Add(c.s, c.sub)
	}
	f.Fuzz(func(t *testing.T, s, sub string) {
		if got, want := lastIndex(s, sub), strings.LastIndex(s, sub); got != want {
			t.Errorf("lastIndex(%q, %q) = %d, want %d", s, sub, got, want)
		}
	})
}

func BenchmarkCopiedRun(b *testing.B) {
	passage := strings.Repeat("The compressor regulates pressure because the upstream coupling transfers thermal energy. ", 7)
	question := "Why does the compressor's regulation of pressure depend on how the coupling transfers energy?"
	b.ReportAllocs()
	for b.Loop() {
		CopiedRun(question, passage)
	}
}

func BenchmarkNewReply(b *testing.B) {
	in := groundedReply(b, "questions.txt")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newReply(in); err != nil {
			b.Fatal(err)
		}
	}
}
