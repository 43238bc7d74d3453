package corpus

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// groundedFixture holds two passage records: the first with two questions
// (one criterion judged invalid in the first, every criterion invalid in
// the second), the second with one question, in other splits.
func groundedFixture() []schema.Record {
	yes, no := exPtr(true), exPtr(false)
	crit := func(id, name string, w float64, valid *bool) schema.Criterion {
		return schema.Criterion{ID: id, Weight: w, Name: name, Description: "The answer explains " + name + ".",
			RequiredElements: []string{name + " element"}, ScoringGuide: "Full weight for a complete " + name + ".",
			VerificationMethod: "Compare with the passage.", ExpectedKeywords: []string{name}, ExpectedConcepts: []string{name + " concept"},
			Valid: valid}
	}
	return []schema.Record{
		{
			ID: "aa00bb11cc22dd33", Source: "go-docs", Split: "train", Style: schema.StyleGrounded, Provenance: exProvenance("fp-g", 9, true),
			Grounded: &schema.Grounded{
				DocID: "doc/go_mem.md", PassageID: "doc/go_mem.md#2", PassageIndex: 2, Title: "The Go Memory Model",
				Passage: "A send on a channel is synchronized before the completion of the corresponding receive from that channel. " +
					"This lets one goroutine hand data to another without a data race.",
				DocHash:  "1234567890abcdef",
				Analysis: schema.Analysis{Genre: "specification", Contribution: "ordering rules", Concepts: []string{"happens-before"}, Depth: "advanced", ReasoningMode: "deductive"},
				Questions: []schema.GroundedQuestion{
					{Index: 0, Question: "How can two goroutines exchange data without a data race, and what ordering makes that safe?",
						Rationale: "Tests the channel synchronization rule.",
						Criteria:  []schema.Criterion{crit("c1", "synchronization", 4, yes), crit("c2", "ordering", 3, no), crit("c3", "race", 2, nil)}},
					{Index: 1, Question: "Why is a plain shared variable not enough?", Rationale: "Tests data races.",
						Criteria: []schema.Criterion{crit("c1", "visibility", 2, no)}},
				},
			},
		},
		{
			ID: "ee44ff5500661177", Source: "go-docs", Split: "validation", Style: schema.StyleGrounded, Provenance: exProvenance("fp-g", 9, false),
			Grounded: &schema.Grounded{
				DocID: "README.md", PassageID: "README.md#0", Title: "Go", Passage: "Go is an open source programming language that makes it simple to build secure, scalable systems.",
				DocHash: "fedcba0987654321",
				Questions: []schema.GroundedQuestion{
					{Index: 0, Question: "What kind of systems is Go designed to make simple to build?", Rationale: "Purpose.",
						Criteria: []schema.Criterion{crit("purpose", "purpose", 1, nil)}},
				},
			},
		},
	}
}

// TestExportGroundedVerl: one row per question; the prompt is the question
// alone, never the passage, the criteria or the rationale; the passage and
// criteria travel in extra_info and the label.
func TestExportGroundedVerl(t *testing.T) {
	recs := append(exportFixture(), groundedFixture()...)
	opt := quietExportOptions(FormatVerl, "export")
	opt.SystemPrompt = "Answer the question."
	m, err := exportIn(t, recs, opt)
	if err != nil {
		t.Fatal(err)
	}
	questions := map[string]*schema.GroundedQuestion{}
	passages := map[string]string{}
	for _, r := range groundedFixture() {
		for k := range r.Grounded.Questions {
			q := &r.Grounded.Questions[k]
			questions[schema.QuestionID(r.ID, q.Index)] = q
			passages[schema.QuestionID(r.ID, q.Index)] = r.Grounded.Passage
		}
	}
	seen := 0
	for file, rows := range readRows[VerlRow](t, "export", m) {
		for _, row := range rows {
			q, grounded := questions[row.ExtraInfo.ID]
			if !grounded {
				if row.ExtraInfo.Passage != "" || row.Ability != "math" {
					t.Errorf("%s: math row %s has passage %q, ability %q", file, row.ExtraInfo.ID, row.ExtraInfo.Passage, row.Ability)
				}
				continue
			}
			seen++
			passage := passages[row.ExtraInfo.ID]
			want := []ChatMessage{{Role: "system", Content: opt.SystemPrompt}, {Role: "user", Content: q.Question}}
			if !reflect.DeepEqual(row.Prompt, want) {
				t.Errorf("%s: %s: prompt %+v, want the question alone", file, row.ExtraInfo.ID, row.Prompt)
			}
			var prompt strings.Builder
			for _, msg := range row.Prompt {
				prompt.WriteString(msg.Content + "\n")
			}
			leaks := []string{passage, q.Rationale}
			for _, sentence := range strings.SplitAfter(passage, ". ") {
				leaks = append(leaks, strings.TrimSpace(sentence))
			}
			for _, c := range q.Criteria {
				leaks = append(leaks, c.Description, c.ScoringGuide)
			}
			for _, l := range leaks {
				if l != "" && strings.Contains(prompt.String(), l) {
					t.Errorf("%s: %s: the prompt holds %q", file, row.ExtraInfo.ID, l)
				}
			}
			if row.ExtraInfo.Passage != passage || row.ExtraInfo.Question != q.Question || row.ExtraInfo.Scheme != schema.SchemeGrounded ||
				row.Ability != "grounded" || row.RewardModel.GroundTruth != "" || row.Solution != "" {
				t.Errorf("%s: %s: extra_info %+v ability %q", file, row.ExtraInfo.ID, row.ExtraInfo, row.Ability)
			}
			var criteria []schema.Criterion
			if err := json.Unmarshal([]byte(row.ExtraInfo.Rubric), &criteria); err != nil || !reflect.DeepEqual(criteria, q.Criteria) {
				t.Errorf("%s: %s: extra_info.rubric %s (%v), want the criteria", file, row.ExtraInfo.ID, row.ExtraInfo.Rubric, err)
			}
			lab, err := schema.ParseLabel([]byte(row.Label))
			if err != nil {
				t.Fatalf("%s: %s: label does not parse: %v", file, row.ExtraInfo.ID, err)
			}
			if lab.ID != row.ExtraInfo.ID || lab.Grounded.Passage != passage || len(lab.Grounded.Criteria) != len(q.Criteria) || lab.Question != q.Question {
				t.Errorf("%s: label %+v", file, lab)
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d grounded rows, want one per question (3)", seen)
	}
	if m.Splits["train"].Rows != 4+2 || m.RecordsOut != int64(len(recs)) {
		t.Errorf("manifest splits %+v, records out %d", m.Splits, m.RecordsOut)
	}
}

func TestExportGroundedRaR(t *testing.T) {
	m, err := exportIn(t, groundedFixture(), quietExportOptions(FormatRaR, "export"))
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows[RaRRow](t, "export", m)["data/train-00000-of-00001.parquet"]
	if len(rows) != 2 {
		t.Fatalf("%d train rows, want 2 (one per question)", len(rows))
	}
	g := groundedFixture()[0].Grounded
	r := rows[0]
	want := []RaRItem{
		{Title: "synchronization", Description: "The answer explains synchronization.", Weight: 4},
		{Title: "ordering", Description: "The answer explains ordering.", Weight: 3},
		{Title: "race", Description: "The answer explains race.", Weight: 2},
	}
	if r.ID != "aa00bb11cc22dd33-q0" || r.Question != g.Questions[0].Question || r.ReferenceAnswer != g.Passage || !reflect.DeepEqual(r.Rubric, want) {
		t.Errorf("rar row %+v", r)
	}
}

func TestExportGroundedJSONL(t *testing.T) {
	m, err := exportIn(t, groundedFixture(), quietExportOptions(FormatJSONL, "export"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Splits["train"].Rows != 1 {
		t.Errorf("jsonl train rows %d, want the one record", m.Splits["train"].Rows)
	}
	data := dirFiles(t, "export")["data/train-00000-of-00001.jsonl"]
	var rec schema.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Grounded == nil || len(rec.Grounded.Questions) != 2 || rec.Grounded.Questions[0].Criteria[1].Valid == nil {
		t.Fatalf("record %+v", rec)
	}
	if g := string(data)[strings.Index(string(data), `"grounded":`):]; strings.Contains(g, "null") || !strings.Contains(g, `"answers":[]`) {
		t.Errorf("a list of the grounded payload is written as null: %s", g)
	}
}

// TestExportGroundedValidOnly: --valid-only drops the invalid criteria and
// a question left without any; the record stays while a question does.
func TestExportGroundedValidOnly(t *testing.T) {
	opt := quietExportOptions(FormatVerl, "export")
	opt.ValidOnly = true
	m, err := exportIn(t, groundedFixture(), opt)
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows[VerlRow](t, "export", m)["data/train-00000-of-00001.parquet"]
	if len(rows) != 1 || rows[0].ExtraInfo.ID != "aa00bb11cc22dd33-q0" {
		t.Fatalf("train rows %+v, want question 0 alone", rows)
	}
	lab, err := schema.ParseLabel([]byte(rows[0].Label))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range lab.Grounded.Criteria {
		ids = append(ids, c.ID)
	}
	if !reflect.DeepEqual(ids, []string{"c1", "c3"}) || m.ItemsDropped != 2 || m.RecordsOut != 2 {
		t.Errorf("criteria %v, items dropped %d, records out %d; want c1 and c3, 2, 2", ids, m.ItemsDropped, m.RecordsOut)
	}
	card := string(dirFiles(t, "export")["README.md"])
	if want := "| grounded criterion | 5 | 1 | 2 | 2 | — | 3 |"; !strings.Contains(card, want) {
		t.Errorf("the card lacks the criteria's row %q:\n%s", want, card)
	}
}
