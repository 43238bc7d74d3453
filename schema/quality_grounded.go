package schema

import (
	"fmt"
	"math"
	"strings"
	"unicode"
)

// QualityRules are the structural checks a grounded question-rubric tuple
// passes before it is written (seed 001 section 3.4's quality assurance,
// plus a check that the question does not copy the passage).
type QualityRules struct {
	MinCriteria    int
	MinTotalWeight float64
	// MaxCopiedWords is the longest run of the passage's words (compared
	// without case and punctuation) the question may repeat.
	MaxCopiedWords int
	// EnrichFills leaves out the fields the enrich stage completes
	// (verification_method, expected_keywords, expected_concepts): a check
	// made before enrichment does not hold their absence against a tuple.
	EnrichFills bool
}

// quotedWords bounds the copied words a reason quotes.
const quotedWords = 16

// QualityProblems lists what is wrong with question q of a passage, one
// reason each; none when it passes.
func QualityProblems(q GroundedQuestion, passage string, r QualityRules) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if strings.TrimSpace(q.Question) == "" {
		bad("the question is empty")
	}
	if strings.TrimSpace(q.Rationale) == "" {
		bad("the question rationale is empty")
	}
	if len(q.Criteria) < r.MinCriteria {
		bad("%d criteria, fewer than the %d required", len(q.Criteria), r.MinCriteria)
	}
	if w := TotalWeight(q.Criteria); w < r.MinTotalWeight || math.IsNaN(w) {
		bad("total weight %g is below the minimum %g", w, r.MinTotalWeight)
	}
	for i, c := range q.Criteria {
		if missing := missingFields(c, r.EnrichFills); len(missing) > 0 {
			bad("criterion %d (%q) has no %s", i+1, c.ID, strings.Join(missing, ", "))
		}
		if c.Weight < 0 || math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) {
			bad("criterion %d (%q) has weight %g; weights must be non-negative numbers", i+1, c.ID, c.Weight)
		}
	}
	if run := CopiedRun(q.Question, passage); len(run) > r.MaxCopiedWords {
		shown := strings.Join(run[:min(len(run), quotedWords)], " ")
		if len(run) > quotedWords {
			shown += " ..."
		}
		bad("the question copies %d consecutive words of the passage (%q); at most %d are allowed", len(run), shown, r.MaxCopiedWords)
	}
	return out
}

// missingFields names the criterion's empty fields; with enrichFills, not
// those the enrich stage completes.
func missingFields(c Criterion, enrichFills bool) []string {
	var out []string
	for _, f := range []struct {
		name   string
		empty  bool
		enrich bool // the enrich stage completes it
	}{
		{"id", strings.TrimSpace(c.ID) == "", false},
		{"name", strings.TrimSpace(c.Name) == "", false},
		{"description", strings.TrimSpace(c.Description) == "", false},
		{"required_elements", len(c.RequiredElements) == 0, false},
		{"scoring_guide", strings.TrimSpace(c.ScoringGuide) == "", false},
		{"verification_method", strings.TrimSpace(c.VerificationMethod) == "", true},
		{"expected_keywords", len(c.ExpectedKeywords) == 0, true},
		{"expected_concepts", len(c.ExpectedConcepts) == 0, true},
	} {
		if f.empty && !(enrichFills && f.enrich) {
			out = append(out, f.name)
		}
	}
	return out
}

// CopiedRun is the longest run of consecutive words of text that also
// appears, consecutively, in passage. Words are compared in lower case,
// without punctuation.
func CopiedRun(text, passage string) []string {
	tw, pw := words(text), words(passage)
	if len(tw) == 0 || len(pw) == 0 {
		return nil
	}
	// Longest common substring over words, by dynamic programming over the
	// shorter text: O(len(tw) * len(pw)) time, O(len(tw)) memory.
	prev := make([]int, len(tw)+1)
	cur := make([]int, len(tw)+1)
	best, end := 0, 0
	for _, p := range pw {
		for i := 1; i <= len(tw); i++ {
			if tw[i-1] == p {
				cur[i] = prev[i-1] + 1
				if cur[i] > best {
					best, end = cur[i], i
				}
			} else {
				cur[i] = 0
			}
		}
		prev, cur = cur, prev
	}
	return tw[end-best : end]
}

// words splits text into lower-case words of letters and digits. ASCII
// text, the usual passage and question, is split byte by byte without
// decoding runes; anything else goes through unicode's tables.
func words(text string) []string {
	if !isASCII(text) {
		return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	lower := strings.ToLower(text)
	n := 0
	for i := 0; i < len(lower); {
		start, end := asciiWord(lower, i)
		if start < end {
			n++
		}
		i = end
	}
	out := make([]string, 0, n)
	for i := 0; i < len(lower); {
		start, end := asciiWord(lower, i)
		if start < end {
			out = append(out, lower[start:end])
		}
		i = end
	}
	return out
}

// asciiWord finds the next run of ASCII letters and digits in s at or after
// byte i: [start, end), empty at the end of s.
func asciiWord(s string, i int) (start, end int) {
	for i < len(s) && !isASCIIAlnum(s[i]) {
		i++
	}
	start = i
	for i < len(s) && isASCIIAlnum(s[i]) {
		i++
	}
	return start, i
}

func isASCIIAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
