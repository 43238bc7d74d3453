package prompts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// Fixed inputs of the grounded judge template.
const (
	fixPassage  = "A write-ahead log makes a store durable: every change is appended and fsynced to the log before the data pages are touched, so after a crash the log is replayed from the last checkpoint."
	fixQuestion = "Why does a database append a change to a log before updating its data pages, and what happens after a crash?"
	fixResponse = "Logging first means a crash never leaves a half-applied change without a record; on restart the log is replayed."
)

func fixCriteria() []schema.Criterion {
	return []schema.Criterion{
		{
			ID: "c1", Weight: 3, Name: "Ordering", Description: "States that the log write reaches disk before the data pages change.",
			RequiredElements: []string{"append before update", "fsync"}, ScoringGuide: "3 if both the order and durability are given; 1 for the order alone.",
			VerificationMethod: "Look for the order of the two writes.", ExpectedKeywords: []string{"write-ahead", "fsync"},
		},
		{
			ID: "c2", Weight: 1.5, Name: "Recovery", Description: "Explains replay from the last checkpoint.",
			ScoringGuide: "Full weight for replay from a checkpoint.", VerificationMethod: "Check that recovery is described.",
		},
	}
}

func TestScoreGroundedShowsEveryCriterionField(t *testing.T) {
	s := mustLoad(t, "")
	msgs, err := s.ScoreGroundedMessages(fixPassage, fixQuestion, fixResponse, fixCriteria())
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(msgs); len(got) != 2 || got[0] != "system" || got[1] != "user" {
		t.Fatalf("roles = %v, want [system user]", got)
	}
	user := msgs[1].Content
	for _, want := range []string{
		"<source_passage>\n" + fixPassage + "\n</source_passage>",
		"<question>\n" + fixQuestion + "\n</question>",
		"]\n" + fixResponse + "\n[end of response ",
		"total weight 4.5",
		"1. [id: c1] Ordering (weight 3)",
		"Required elements: append before update; fsync",
		"Scoring guide: 3 if both the order and durability are given; 1 for the order alone.",
		"Expected keywords: write-ahead; fsync",
		"Verification: Look for the order of the two writes.",
		"2. [id: c2] Recovery (weight 1.5)",
		"Description: Explains replay from the last checkpoint.",
		"Required elements: (none)",
		`"max_total": <the total weight>`,
	} {
		if !strings.Contains(user, want) {
			t.Errorf("judge prompt lacks %q:\n%s", want, user)
		}
	}
	for _, n := range []string{fixPassage, fixQuestion, fixResponse} {
		if c := strings.Count(user, n); c != 1 {
			t.Errorf("%q appears %d times, want once", n[:20], c)
		}
	}
}

func TestFormatWeight(t *testing.T) {
	for w, want := range map[float64]string{3: "3", 1.5: "1.5", 0: "0", 0.1: "0.1", 12.25: "12.25"} {
		if got := FormatWeight(w); got != want {
			t.Errorf("FormatWeight(%v) = %q, want %q", w, got, want)
		}
	}
}

// TestSynthesizeStatesTheWeightScale: the synthesis is told the weight
// scale and the least total a rubric's weights must reach, so a model does
// not write weights that add up to 1 and fail the minimum total weight.
func TestSynthesizeStatesTheWeightScale(t *testing.T) {
	s := mustLoad(t, "")
	for _, minTotal := range []float64{5, 12.5} {
		msgs, err := s.GroundedSynthesizeMessages("t", fixPassage, schema.Analysis{Genre: "g", Concepts: []string{"c"}}, PassagePosition{Number: 1, Count: 1}, RubricBounds{K: 1, MinCriteria: 5, MaxCriteria: 8, MinTotalWeight: minTotal})
		if err != nil {
			t.Fatal(err)
		}
		user := msgs[len(msgs)-1].Content
		for _, want := range []string{"a number from 1 to 5", "not meant to add up to 1", "must add up to at least " + FormatWeight(minTotal)} {
			if !strings.Contains(user, want) {
				t.Errorf("the synthesis prompt (minimum %g) does not say %q", minTotal, want)
			}
		}
	}
}

// TestCheckRendersEveryTemplate: the embedded templates all pass Check,
// every template has sample inputs, and an override that names a field its
// stage does not give fails Check with the file named.
func TestCheckRendersEveryTemplate(t *testing.T) {
	if err := mustLoad(t, "").Check(Names...); err != nil {
		t.Fatalf("the embedded templates fail Check: %v", err)
	}
	for _, name := range Names {
		dir := t.TempDir()
		path := filepath.Join(dir, name+".tmpl")
		if err := os.WriteFile(path, []byte("=== user ===\n{{.NoSuchField}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := mustLoad(t, dir).Check(Names...)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "NoSuchField") {
			t.Errorf("%s: an override with an unknown field passes Check or is not named: %v", name, err)
		}
	}
}

// BenchmarkRenderGrounded renders the grounded stages' prompts for a
// ~600-character passage and a rubric of 8 criteria, as the grounded scale
// benchmark does for every passage, through the compiled programs and
// through text/template alone (the reference they replace).
func BenchmarkRenderGrounded(b *testing.B) {
	passage := strings.Repeat(fixPassage+" ", 3)
	a := schema.Analysis{Genre: "technical report", Contribution: "Explains write-ahead logging.",
		Concepts: []string{"write-ahead log", "checkpoint", "fsync", "recovery"}, Depth: "intermediate", ReasoningMode: "causal explanation"}
	var criteria []schema.Criterion
	for range 4 {
		criteria = append(criteria, fixCriteria()...)
	}
	bounds := RubricBounds{K: 1, MinCriteria: 3, MaxCriteria: 8, MinTotalWeight: 5}
	stages := []struct {
		name   string
		render func(s *Set) ([]Message, error)
	}{
		{"synthesize", func(s *Set) ([]Message, error) {
			return s.GroundedSynthesizeMessages("Logs", passage, a, PassagePosition{Number: 1, Count: 1}, bounds)
		}},
		{"enrich", func(s *Set) ([]Message, error) { return s.GroundedEnrichMessages(passage, fixQuestion, a, criteria) }},
		{"judge_batch", func(s *Set) ([]Message, error) { return s.GroundedJudgeBatchMessages(passage, fixQuestion, criteria) }},
	}
	paths := []struct {
		name string
		set  *Set
	}{{"compiled", mustLoad(b, "")}, {"text_template", textTemplateOnly(mustLoad(b, ""))}}
	for _, st := range stages {
		for _, p := range paths {
			b.Run(st.name+"/"+p.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := st.render(p.set); err != nil {
						b.Fatal(err)
					}
				}
				if n := p.set.fallbacks.Load(); n != 0 {
					b.Fatalf("%d renders fell back to text/template", n)
				}
			})
		}
	}
}
