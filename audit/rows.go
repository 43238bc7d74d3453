package audit

import (
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// row is what the audit reads of one record: every column a figure needs and
// none of the long texts it does not (rollout texts, extracted answers,
// judge reasons, the reference). Its json tags are schema.Record's, so JSONL
// records decode into it too.
type row struct {
	ID         string       `parquet:"id" json:"id"`
	Split      string       `parquet:"split" json:"split"`
	Problem    string       `parquet:"problem" json:"problem"`
	Answer     string       `parquet:"answer" json:"answer"`
	Style      string       `parquet:"style" json:"style"`
	Rubric     []item       `parquet:"rubric,list" json:"rubric"`
	Rollouts   []rollout    `parquet:"rollouts,list" json:"rollouts"`
	NCorrect   int32        `parquet:"n_correct" json:"n_correct"`
	PassRate   float64      `parquet:"pass_rate" json:"pass_rate"`
	Provenance provenance   `parquet:"provenance" json:"provenance"`
	Usage      schema.Usage `parquet:"usage" json:"usage"`
	// Grounded is read from JSONL here and from Parquet by scanRows
	// (older shards have no such column).
	Grounded *schema.Grounded `parquet:"-" json:"grounded"`
}

// provenance is what the audit reads of a record's provenance: the
// columns of every readable layout (schema.Provenance without the judges'
// seeds, which shards written before them lack; reading them would make
// those shards unreadable).
type provenance struct {
	RolloutModel   string    `parquet:"rollout_model" json:"rollout_model"`
	DistillModel   string    `parquet:"distill_model" json:"distill_model"`
	JudgeModel     *string   `parquet:"judge_model,optional" json:"judge_model"`
	EmpiricalModel *string   `parquet:"empirical_model,optional" json:"empirical_model"`
	Alpha          *float64  `parquet:"alpha,optional" json:"alpha"`
	JobFingerprint string    `parquet:"job_fingerprint" json:"job_fingerprint"`
	SpecVersion    string    `parquet:"spec_version" json:"spec_version"`
	ToolVersion    string    `parquet:"tool_version" json:"tool_version"`
	CreatedAt      time.Time `parquet:"created_at,timestamp(millisecond)" json:"created_at"`
}

// item is a rubric item without its judge reason.
type item struct {
	ID             int32    `parquet:"id" json:"id"`
	Type           string   `parquet:"type" json:"type"`
	Text           string   `parquet:"text" json:"text"`
	Weight         float64  `parquet:"weight" json:"weight"`
	Polarity       int32    `parquet:"polarity" json:"polarity"`
	Valid          *bool    `parquet:"valid,optional" json:"valid,omitempty"`
	SatRate        *float64 `parquet:"sat_rate,optional" json:"sat_rate,omitempty"`
	Corr           *float64 `parquet:"corr,optional" json:"corr,omitempty"`
	EmpiricalValid *bool    `parquet:"empirical_valid,optional" json:"empirical_valid,omitempty"`
}

// rollout is a rollout without its text.
type rollout struct {
	Index            int32          `parquet:"index" json:"index"`
	Correct          bool           `parquet:"correct" json:"correct"`
	FormatOK         bool           `parquet:"format_ok" json:"format_ok"`
	FinishReason     string         `parquet:"finish_reason" json:"finish_reason"`
	CompletionTokens *int32         `parquet:"completion_tokens,optional" json:"completion_tokens,omitempty"`
	Satisfaction     []satisfaction `parquet:"satisfaction,list" json:"satisfaction"`
}

// satisfaction is one per-rollout verdict without its step.
type satisfaction struct {
	ID        int32 `parquet:"item_id" json:"item_id"`
	Satisfied bool  `parquet:"satisfied" json:"satisfied"`
}

// schemaItem is it as a schema.Item, for the schema's structural rules.
func (it *item) schemaItem() schema.Item {
	return schema.Item{ID: it.ID, Type: it.Type, Text: it.Text, Weight: it.Weight, Polarity: it.Polarity,
		Valid: it.Valid, SatRate: it.SatRate, Corr: it.Corr, EmpiricalValid: it.EmpiricalValid}
}

// rowOfLabel is what a verl export's label holds of a record: no rollouts,
// no provenance but the spec version, no usage.
func rowOfLabel(l *schema.Label, split string) row {
	if l.Grounded != nil {
		return groundedRowOfLabel(l, split)
	}
	r := row{ID: l.ID, Split: split, Problem: l.Question, Answer: l.GroundTruth, Style: l.Style, Rubric: make([]item, len(l.Rubric))}
	r.Provenance.SpecVersion = l.V
	for i, it := range l.Rubric {
		r.Rubric[i] = item{ID: it.ID, Type: it.Type, Text: it.Text, Weight: it.Weight, Polarity: it.Polarity,
			Valid: it.Valid, SatRate: it.SatRate, Corr: it.Corr, EmpiricalValid: it.EmpiricalValid}
	}
	return r
}

// judgedRow is what sampling for annotation and re-judging read: the
// problem, its ground truth and the rubric with the stored verdicts.
type judgedRow struct {
	ID      string       `parquet:"id" json:"id"`
	Problem string       `parquet:"problem" json:"problem"`
	Answer  string       `parquet:"answer" json:"answer"`
	Rubric  []judgedItem `parquet:"rubric,list" json:"rubric"`
	// Grounded is a grounded record's passage and criteria with their
	// stored verdicts (null for a math record).
	Grounded *judgedGrounded `parquet:"grounded,optional" json:"grounded,omitempty"`
}

type judgedGrounded struct {
	Passage   string           `parquet:"passage" json:"passage"`
	Questions []judgedQuestion `parquet:"questions,list" json:"questions"`
}

type judgedQuestion struct {
	Index    int32             `parquet:"index" json:"index"`
	Question string            `parquet:"question" json:"question"`
	Criteria []judgedCriterion `parquet:"criteria,list" json:"criteria"`
}

type judgedCriterion struct {
	Name             string   `parquet:"name" json:"name"`
	Description      string   `parquet:"description" json:"description"`
	Weight           float64  `parquet:"weight" json:"weight"`
	RequiredElements []string `parquet:"required_elements,list" json:"required_elements"`
	Valid            *bool    `parquet:"valid,optional" json:"valid,omitempty"`
}

// CriterionType is the type a grounded criterion has on an annotation
// sheet and in the agreement figures by type.
const CriterionType = "criterion"

// judgedCriteria are a grounded record's criteria as sample items: each
// under its question's id (schema.QuestionID) and its position in the
// question from 1, its text its description, with its question as the
// problem and the passage as the ground truth people judge it against.
func (r *judgedRow) judgedCriteria() []SampleItem {
	var out []SampleItem
	for _, q := range r.questionCriteria() {
		out = append(out, q...)
	}
	return out
}

// questionCriteria are judgedCriteria by question, in question order,
// each question's criteria in their order.
func (r *judgedRow) questionCriteria() [][]SampleItem {
	if r.Grounded == nil {
		return nil
	}
	var out [][]SampleItem
	for _, q := range r.Grounded.Questions {
		var g []SampleItem
		for i, c := range q.Criteria {
			g = append(g, SampleItem{RecordID: schema.QuestionID(r.ID, q.Index), ItemID: int32(i + 1), Type: CriterionType,
				Text: c.Description, Problem: q.Question, Answer: r.Grounded.Passage, Stored: c.Valid,
				Criterion: &schema.Criterion{Name: c.Name, Description: c.Description, Weight: c.Weight, RequiredElements: c.RequiredElements}})
		}
		out = append(out, g)
	}
	return out
}

type judgedItem struct {
	ID    int32  `parquet:"id" json:"id"`
	Type  string `parquet:"type" json:"type"`
	Text  string `parquet:"text" json:"text"`
	Valid *bool  `parquet:"valid,optional" json:"valid,omitempty"`
}

func judgedOfLabel(l *schema.Label, _ string) judgedRow {
	r := judgedRow{ID: l.ID, Problem: l.Question, Answer: l.GroundTruth, Rubric: make([]judgedItem, len(l.Rubric))}
	for i, it := range l.Rubric {
		r.Rubric[i] = judgedItem{ID: it.ID, Type: it.Type, Text: it.Text, Valid: it.Valid}
	}
	if g := l.Grounded; g != nil {
		q := judgedQuestion{Index: g.Index, Question: l.Question}
		for _, c := range g.Criteria {
			q.Criteria = append(q.Criteria, judgedCriterion{Name: c.Name, Description: c.Description, Weight: c.Weight,
				RequiredElements: c.RequiredElements, Valid: c.Valid})
		}
		r.ID, r.Grounded = g.RecordID, &judgedGrounded{Passage: g.Passage, Questions: []judgedQuestion{q}}
	}
	return r
}

// labelRow is what the audit reads of a verl export row.
type labelRow struct {
	Label     string `parquet:"label"`
	ExtraInfo struct {
		Split string `parquet:"split"`
	} `parquet:"extra_info"`
}
