package sim

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

const genPassage = "A heat pipe carries heat by evaporating a working fluid at the hot end and condensing it at the cold end. " +
	"The wick returns the condensate by capillary action, which limits the heat the pipe can carry against gravity. " +
	"Therefore the capillary limit, the sonic limit and the boiling limit bound the operating envelope of the pipe."

// TestGroundedGenerationContract: every grounded stage template is
// recognized, and its well-formed replies pass the pipeline's strict
// parsers; malformed attempts fail them.
func TestGroundedGenerationContract(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{InvalidRate: 0.2})
	analysis := schema.Analysis{}
	for seed := range int64(20) {
		msgs, err := ps.GroundedAnalyzeMessages(prompts.DocumentView{Title: "Heat pipes", Head: genPassage, Chars: len(genPassage), Outline: "- Heat pipes\n  - Wicks"})
		if err != nil {
			t.Fatal(err)
		}
		if k := Classify(toMessages(msgs)); k != KindGroundedAnalyze {
			t.Fatalf("analyze prompt classified as %s", k)
		}
		reply := complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content
		if analysis, err = schema.ParseAnalysis(reply); err != nil || analysis.ReasoningMode != "causal explanation" {
			t.Fatalf("analysis %+v, %v:\n%s", analysis, err, reply)
		}
	}
	thin, quality := 0, 0
	for seed := range int64(20) {
		msgs, err := ps.GroundedSynthesizeMessages("Heat pipes", genPassage, analysis, prompts.PassagePosition{Number: 1, Count: 3, Section: "Heat pipes"}, prompts.RubricBounds{K: 3, MinCriteria: 5, MaxCriteria: 8, MinTotalWeight: 5})
		if err != nil {
			t.Fatal(err)
		}
		if k := Classify(toMessages(msgs)); k != KindGroundedSynthesize {
			t.Fatalf("synthesize prompt classified as %s", k)
		}
		reply := complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content
		qs, err := schema.ParseQuestions(reply, schema.QuestionOptions{K: 3, MinCriteria: 5, MaxCriteria: 8})
		if err != nil {
			t.Fatalf("synthesis does not parse: %v\n%s", err, reply)
		}
		for _, q := range qs {
			if len(schema.QualityProblems(q, genPassage, schema.QualityRules{MinCriteria: 5, MaxCopiedWords: 12})) > 0 {
				quality++
			}
			var ids []string
			for _, c := range q.Criteria {
				if len(c.ExpectedKeywords) < 3 {
					thin++
				}
				ids = append(ids, c.ID)
			}
			emsgs, err := ps.GroundedEnrichMessages(genPassage, q.Question, analysis, q.Criteria)
			if err != nil {
				t.Fatal(err)
			}
			if k := Classify(toMessages(emsgs)); k != KindGroundedEnrich {
				t.Fatalf("enrich prompt classified as %s", k)
			}
			reply := complete(t, s, seeded(emsgs, seed, 1)).Choices[0].Message.Content
			got, err := schema.ParseEnrichment(reply, ids, 3, 2)
			if err != nil {
				t.Fatalf("enrichment of %v does not parse: %v\n%s", ids, err, reply)
			}
			for _, en := range got { // the simulated model uses the analysis it is shown
				if !slices.ContainsFunc(en.Concepts, func(c string) bool { return slices.Contains(analysis.Concepts, c) }) {
					t.Fatalf("criterion %s enriched with concepts %v, none of the analysis's %v", en.ID, en.Concepts, analysis.Concepts)
				}
			}
			bmsgs, _ := ps.GroundedJudgeBatchMessages(genPassage, q.Question, q.Criteria)
			nums := make([]int32, len(q.Criteria))
			for i := range nums {
				nums[i] = int32(i + 1)
			}
			vs, err := schema.ParseValidityBatch(complete(t, s, seeded(bmsgs, seed, 1)).Choices[0].Message.Content, nums)
			if err != nil {
				t.Fatalf("batch verdicts: %v", err)
			}
			for i, c := range q.Criteria { // item mode agrees with batch mode
				imsgs, _ := ps.GroundedJudgeItemMessages(genPassage, q.Question, c)
				v, err := schema.ParseValidity(complete(t, s, seeded(imsgs, seed, 1)).Choices[0].Message.Content)
				if err != nil || v.Valid != vs[i].Valid {
					t.Fatalf("criterion %s: item verdict %v (%v), batch %v", c.ID, v.Valid, err, vs[i].Valid)
				}
			}
		}
	}
	if thin == 0 {
		t.Error("the simulated synthesis never leaves a criterion thin, so enrichment is never exercised")
	}
	if quality != 0 {
		t.Errorf("%d well-formed tuples of a short passage fail the quality checks", quality)
	}
}

// TestGroundedMalformedReplies: a malformed attempt of each generation
// stage fails its parser, as the repair path expects.
func TestGroundedMalformedReplies(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{Faults: Faults{Malformed: 1}})
	a := schema.Analysis{Genre: "note", Contribution: "c", Concepts: []string{"capillary"}, Depth: "intermediate", ReasoningMode: "causal"}
	for seed := range int64(10) {
		msgs, _ := ps.GroundedAnalyzeMessages(prompts.DocumentView{Head: genPassage, Chars: len(genPassage)})
		if _, err := schema.ParseAnalysis(complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content); err == nil {
			t.Error("a malformed analysis parsed")
		}
		msgs, _ = ps.GroundedSynthesizeMessages("", genPassage, a, prompts.PassagePosition{Number: 1, Count: 1}, prompts.RubricBounds{K: 1, MinCriteria: 5, MaxCriteria: 10, MinTotalWeight: 5})
		if _, err := schema.ParseQuestions(complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content, schema.QuestionOptions{K: 1, MinCriteria: 5, MaxCriteria: 10}); err == nil {
			t.Error("a malformed synthesis parsed")
		}
	}
}

// TestGroundedAnswersDiffer: closed-book answers to one question differ
// from sample to sample and never quote a passage (they are not shown one).
func TestGroundedAnswersDiffer(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{})
	msgs, _ := ps.GroundedAnswerMessages("In heat pipes, how does capillary pumping interact with gravity, and what limits the transport?")
	if k := Classify(toMessages(msgs)); k != KindGroundedAnswer {
		t.Fatalf("answer prompt classified as %s", k)
	}
	seen := map[string]bool{}
	for seed := range int64(12) {
		seen[complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content] = true
	}
	if len(seen) < 4 {
		t.Errorf("only %d different answers in 12 samples", len(seen))
	}
	for a := range seen {
		if strings.Contains(a, "<passage>") {
			t.Errorf("answer quotes a passage: %s", a)
		}
	}
}

// topTermsBySortSlice is topTerms as first written (sort.Slice over a
// map's keys): the reference the faster ranking must agree with, so the
// simulator's replies stay byte-identical.
func topTermsBySortSlice(passage string, n int) []string {
	count := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(passage), func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) {
		w = strings.Trim(w, "-")
		if len([]rune(w)) >= 6 && !termStopWords[w] {
			count[w]++
		}
	}
	terms := make([]string, 0, len(count))
	for w := range count {
		terms = append(terms, w)
	}
	sort.Slice(terms, func(i, j int) bool {
		if count[terms[i]] != count[terms[j]] {
			return count[terms[i]] > count[terms[j]]
		}
		return terms[i] < terms[j]
	})
	if len(terms) > n {
		terms = terms[:n]
	}
	for len(terms) < 2 {
		terms = append(terms, []string{"mechanism", "principle"}[len(terms)])
	}
	return terms
}

const termsPassage = "The compressor of unit 0 regulates pressure because the upstream coupling transfers thermal energy into mechanical motion. " +
	"Operators measure efficiency by comparing delivered output with consumed input; the difference appears as dissipation in bearings and seals.\n\n" +
	"Calibration of the compressor matters whenever temperature drifts beyond the nominal envelope, which for unit 0 is 250 kelvin. " +
	"Therefore maintenance schedules track drift, vibration and lubrication together, and replacement follows sustained degradation of the compressor."

var termsPassages = []string{
	termsPassage, "", "short words only here", "Ünïcödé wörter: Straße-Straße größer größer größer -hyphen- co-operate co-operate",
	"alpha1beta gamma-delta-epsilon gamma-delta-epsilon zzzzzz aaaaaa aaaaaa zzzzzz mmmmmm because because",
	"--leading-- trailing--- ---- pre--post UPPER-case MiXeD-Words mixed-words Because\tTHEREFORE\nsix-letter",
}

func TestTopTermsRanking(t *testing.T) {
	t.Parallel()
	for _, passage := range termsPassages {
		for _, n := range []int{0, 1, 3, 8, 24} {
			want := topTermsBySortSlice(passage, n)
			if got := topTerms(passage, n); !slices.Equal(got, want) {
				t.Errorf("topTerms(%.30q, %d) = %q, want %q", passage, n, got, want)
			}
		}
	}
	if got := topTerms(termsPassage, 3); !slices.Equal(got, []string{"compressor", "appears", "bearings"}) {
		t.Errorf("topTerms = %q", got)
	}
}

func BenchmarkTopTerms(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		topTerms(termsPassage, 24)
	}
}

// TestOpenBookAnswersScoreHigher: an open-book answer prompt (the passage
// in view) is recognized, its answers differ, and the simulated judge
// scores them higher than closed-book answers to the same question on the
// criteria the synthesis grounded in the passage: over the questions of
// several passages, most criteria have a positive open-book edge and none
// a negative mean.
func TestOpenBookAnswersScoreHigher(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{})
	const n = 8
	positive, criteria := 0, 0
	var edgeSum float64
	for seed := range int64(6) {
		msgs, _ := ps.GroundedSynthesizeMessages("Heat pipes", genPassage, schema.Analysis{}, prompts.PassagePosition{Number: 1, Count: 1}, prompts.RubricBounds{K: 2, MinCriteria: 5, MaxCriteria: 8, MinTotalWeight: 5})
		qs, err := schema.ParseQuestions(complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content, schema.QuestionOptions{K: 2, MinCriteria: 5, MaxCriteria: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			closed, _ := ps.GroundedAnswerMessages(q.Question)
			open, _ := ps.GroundedAnswerOpenMessages(genPassage, q.Question)
			if k := Classify(toMessages(open)); k != KindGroundedAnswerOpen {
				t.Fatalf("open-book answer prompt classified as %s", k)
			}
			meanOf := func(msgs []prompts.Message) []float64 {
				sum := make([]float64, len(q.Criteria))
				texts := map[string]bool{}
				for a := range int64(n) {
					text := complete(t, s, seeded(msgs, seed*100+a, 1)).Choices[0].Message.Content
					texts[text] = true
					sm, _ := ps.ScoreGroundedMessages(genPassage, q.Question, text, q.Criteria)
					g, err := schema.ParseGroundedScores(complete(t, s, seeded(sm, 0, 1)).Choices[0].Message.Content, q.Criteria)
					if err != nil {
						t.Fatal(err)
					}
					for i, x := range g.Scores {
						sum[i] += x / n
					}
				}
				if len(texts) < n/2 {
					t.Errorf("only %d different answers in %d samples", len(texts), n)
				}
				return sum
			}
			withPassage, without := meanOf(open), meanOf(closed)
			for i, c := range q.Criteria {
				edge := (withPassage[i] - without[i]) / c.Weight
				criteria++
				edgeSum += edge
				if edge > 0 {
					positive++
				}
				if edge < 0 {
					t.Errorf("criterion %s (%s) scores lower with the passage: edge %.3f", c.ID, c.Name, edge)
				}
			}
		}
	}
	if positive*10 < criteria*8 || edgeSum/float64(criteria) < 0.2 {
		t.Errorf("%d of %d criteria have a positive open-book edge, mean edge %.3f", positive, criteria, edgeSum/float64(criteria))
	}
}

// FuzzTopTerms: the ranking equals the reference's on any text, ASCII (split
// byte by byte) or not.
func FuzzTopTerms(f *testing.F) {
	for _, p := range termsPassages {
		f.Add(p, 8)
	}
	f.Fuzz(func(t *testing.T, passage string, n int) {
		n = max(0, min(n, 64))
		if got, want := topTerms(passage, n), topTermsBySortSlice(passage, n); !slices.Equal(got, want) {
			t.Errorf("topTerms(%q, %d) = %q, want %q", passage, n, got, want)
		}
	})
}
