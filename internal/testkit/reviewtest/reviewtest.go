// Package reviewtest writes small demo-like corpora for the tests of
// `validate review` and `distill export --review`: records of the example
// problems with SRaR rubrics, rollouts, judge verdicts and empirical
// figures, some of them the kind a reviewer should catch.
package reviewtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// Fingerprint is the job fingerprint of every record DemoRun writes.
const Fingerprint = "0123456789abcdef"

// Problem is one example problem.
type Problem struct {
	Problem string `json:"problem"`
	Answer  string `json:"answer"`
}

// Problems reads the first n problems of examples/problems.jsonl.
func Problems(n int) ([]Problem, error) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(root, "examples", "problems.jsonl"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	var out []Problem
	sc := bufio.NewScanner(f)
	for len(out) < n && sc.Scan() {
		var p Problem
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// Records are n demo-like records, ids r00..; record i's item 3 (the
// PITFALL) is judged invalid when i is even, and its empirical figures
// (which its rollouts' satisfaction verdicts give) disagree with the
// judge's verdict when i%3 == 0.
func Records(n int) ([]schema.Record, error) {
	ps, err := Problems(n)
	if err != nil {
		return nil, err
	}
	set, err := prompts.Load("")
	if err != nil {
		return nil, err
	}
	tmpl := templates{set.Hash(prompts.Rollout), set.Hash(prompts.DistillSRaR), set.Hash(prompts.JudgeBatch), set.Hash(prompts.Satisfy)}
	var out []schema.Record
	for i, p := range ps {
		out = append(out, record(i, p, tmpl))
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// templates are the hashes of this build's templates.
type templates struct{ rollout, distill, judge, satisfy string }

func record(i int, p Problem, tmpl templates) schema.Record {
	items := []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "States the counting principle the solution relies on before using it.", Weight: 1},
		{ID: 2, Type: schema.TypeSuggest, Text: "Checks the result against a small case worked out by hand.", Weight: 1},
		{ID: 3, Type: schema.TypePitfall, Text: "Counts ordered selections where the order does not matter.", Weight: 1},
		{ID: 4, Type: schema.TypeBonus, Text: "Explains why no case is counted twice.", Weight: 0.5},
		{ID: 5, Type: schema.TypeAnswer, Text: "The final answer equals " + p.Answer + ".", Weight: 2},
	}
	separates := make([]bool, len(items))
	for k := range items {
		it := &items[k]
		it.Polarity = schema.PolarityOf(it.Type)
		valid := !(k == 2 && i%2 == 0)
		it.Valid = ptr(valid)
		reason := "The item is checkable from the solution text and tied to correctness."
		if !valid {
			reason = "The item restates the problem's wording rather than a step a solution takes."
		}
		it.ValidReason = ptr(reason)
		separates[k] = valid != (k == 2 && i%3 == 0)
		it.EmpiricalValid = ptr(separates[k])
		it.SatRate = ptr(0.5)
		it.Corr = ptr(map[bool]float64{true: 1, false: 0}[separates[k]])
	}
	var rollouts []schema.Rollout
	for r := range 4 {
		correct := r < 2
		ro := schema.Rollout{Index: int32(r), Correct: correct, FormatOK: true, FinishReason: "stop",
			Text:            fmt.Sprintf("### Step 1\nRead the problem: %s\n### Step 2\nWork it out.\n\nThe answer is \\boxed{%s}.", p.Problem, answerOf(p.Answer, correct)),
			ExtractedAnswer: answerOf(p.Answer, correct), CompletionTokens: ptr(int32(120 + r))}
		for k, it := range items {
			sat := correct == (it.Polarity > 0)
			if !separates[k] {
				sat = r%2 == 0 // satisfied by one correct and one flawed rollout: no edge
			}
			ro.Satisfaction = append(ro.Satisfaction, schema.Satisfaction{ID: it.ID, Satisfied: sat, Step: 1})
		}
		rollouts = append(rollouts, ro)
	}
	judge, emp := "judge-model", "judge-model"
	return schema.Record{
		ID: fmt.Sprintf("r%02d", i), Source: "rubricforge-examples", Split: "train", Problem: p.Problem, Answer: p.Answer,
		Style: schema.StyleSRaR, Rubric: items, Rollouts: rollouts, NCorrect: 2, PassRate: 0.5,
		Provenance: schema.Provenance{RolloutModel: "policy-model", DistillModel: "distill-model", JudgeModel: &judge, EmpiricalModel: &emp,
			RolloutTemplate: tmpl.rollout, DistillTemplate: tmpl.distill, JudgeTemplate: &tmpl.judge, SatisfyTemplate: &tmpl.satisfy, Alpha: ptr(0.2),
			JobFingerprint: Fingerprint, SpecVersion: schema.SpecVersion, ToolVersion: "test", CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		Usage: schema.Usage{Requests: 3},
	}
}

func answerOf(answer string, correct bool) string {
	if correct {
		return answer
	}
	return answer + "1"
}

// DemoRun writes a run directory of n demo-like records into dir.
func DemoRun(dir string, n int) error {
	recs, err := Records(n)
	if err != nil {
		return err
	}
	return writeRun(dir, Fingerprint, recs)
}

// GroundedFingerprint is the job fingerprint of every record GroundedRun
// writes.
const GroundedFingerprint = "fedcba9876543210"

// GroundedRecords are n grounded records, ids g00..: one passage each with
// two questions of three criteria (weights 3, 2, 1). Criterion 2 of
// question 0 is judged invalid; criterion 3 of every question scores the
// same on every closed-book answer (it varies not: no training signal).
// Each question has four closed-book answers with a score per criterion.
func GroundedRecords(n int) []schema.Record {
	var out []schema.Record
	for i := range n {
		id := schema.PassageRecordID(fmt.Sprintf("doc%02d.md", i), 0)
		passage := fmt.Sprintf("Passage %d. A write-ahead log records each change and forces it to stable storage before the data pages are modified, so that recovery can replay it after a crash.", i)
		var qs []schema.GroundedQuestion
		for k := range 2 {
			var crit []schema.Criterion
			for c, w := range []float64{3, 2, 1} {
				cr := schema.Criterion{ID: fmt.Sprintf("c%d", c+1), Weight: w, Name: fmt.Sprintf("point %d", c+1),
					Description:      fmt.Sprintf("The answer states point %d of question %d: the log reaches stable storage first.", c+1, k),
					RequiredElements: []string{"stable storage"}, ScoringGuide: "Full marks when the point is stated.",
					VerificationMethod: "Look for the point.", ExpectedKeywords: []string{"log"}, ExpectedConcepts: []string{"durability"},
					Valid: ptr(!(c == 1 && k == 0)), ValidReason: ptr("Checkable against the passage."),
					ScoreMean: ptr(0.5), Varies: ptr(c != 2)}
				crit = append(crit, cr)
			}
			var answers []schema.GroundedAnswer
			for a := range 4 {
				s := float64(a % 2)
				answers = append(answers, schema.GroundedAnswer{Index: int32(a), Text: fmt.Sprintf("Answer %d.", a), Scores: []float64{3 * s, 2 * s, 0.5}})
			}
			qs = append(qs, schema.GroundedQuestion{Index: int32(k), Rationale: "r", Criteria: crit, Answers: answers,
				Question: fmt.Sprintf("Question %d of passage %d: why must a change reach stable storage before the pages are modified?", k, i)})
		}
		out = append(out, schema.Record{
			ID: id, Source: "rubricforge-docs", Split: "train", Style: schema.StyleGrounded, Rubric: []schema.Item{}, Rollouts: []schema.Rollout{},
			Provenance: schema.Provenance{DistillModel: "distill-model", SpecVersion: schema.SpecVersion, ToolVersion: "test",
				JobFingerprint: GroundedFingerprint, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
			Grounded: &schema.Grounded{DocID: fmt.Sprintf("doc%02d.md", i), PassageID: id, Title: fmt.Sprintf("Document %d", i),
				Passage: passage, DocHash: "0123456789abcdef", Questions: qs,
				Analysis: schema.Analysis{Genre: "tutorial", Depth: "intermediate", ReasoningMode: "causal", Concepts: []string{"WAL"}}},
		})
	}
	return out
}

// GroundedRun writes a run directory of n grounded records into dir.
func GroundedRun(dir string, n int) error {
	return writeRun(dir, GroundedFingerprint, GroundedRecords(n))
}

// writeRun writes recs as a run directory with job fingerprint fp.
func writeRun(dir, fp string, recs []schema.Record) error {
	run, err := corpus.Open(dir, corpus.Options{})
	if err != nil {
		return err
	}
	run.SetFingerprint(fp)
	for i := range recs {
		if err := run.Append(&recs[i]); err != nil {
			_ = run.Close() // the append failed; err says why
			return err
		}
	}
	return run.Close()
}
