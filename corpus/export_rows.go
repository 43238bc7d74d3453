package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// The rows of each export format. Their parquet tags are the column names,
// in column order; their json tags are the same names, so a row printed as
// JSON is the dict a trainer receives from HF datasets.

// ChatMessage is one message of a verl prompt.
type ChatMessage struct {
	Role    string `parquet:"role" json:"role"`
	Content string `parquet:"content" json:"content"`
}

// VerlRewardModel is verl's reward_model column. Style is always "rubric":
// verl skips validation for "model".
type VerlRewardModel struct {
	Style       string `parquet:"style" json:"style"`
	GroundTruth string `parquet:"ground_truth" json:"ground_truth"`
}

// VerlExtraInfo is verl's extra_info column, the only part of a row that
// verl hands to a custom reward function besides the ground truth.
type VerlExtraInfo struct {
	Split       string `parquet:"split" json:"split"`
	Index       int64  `parquet:"index" json:"index"` // row index within the split
	ID          string `parquet:"id" json:"id"`
	Question    string `parquet:"question" json:"question"`
	Answer      string `parquet:"answer" json:"answer"`
	Rubric      string `parquet:"rubric" json:"rubric"` // JSON array of schema.Item
	Scheme      string `parquet:"scheme" json:"scheme"`
	SpecVersion string `parquet:"spec_version" json:"spec_version"`
	// Passage is a grounded question's passage, the judge's answer key;
	// empty for a math problem.
	Passage string `parquet:"passage" json:"passage"`
}

// VerlRow is one row of a verl export.
type VerlRow struct {
	DataSource  string          `parquet:"data_source" json:"data_source"`
	Prompt      []ChatMessage   `parquet:"prompt,list" json:"prompt"`
	Ability     string          `parquet:"ability" json:"ability"`
	RewardModel VerlRewardModel `parquet:"reward_model" json:"reward_model"`
	ExtraInfo   VerlExtraInfo   `parquet:"extra_info" json:"extra_info"`
	Label       string          `parquet:"label" json:"label"` // JSON of schema.Label
	Solution    string          `parquet:"solution" json:"solution"`
}

// RaRItem is one rubric item in the RaR datasets' shape. Weight is signed:
// negative for a PITFALL, whose satisfaction is the mistake.
type RaRItem struct {
	Title       string  `parquet:"title" json:"title"`
	Description string  `parquet:"description" json:"description"`
	Weight      float64 `parquet:"weight" json:"weight"`
}

// RaRRow is one row of a rar export.
type RaRRow struct {
	Question        string    `parquet:"question" json:"question"`
	ReferenceAnswer string    `parquet:"reference_answer" json:"reference_answer"`
	QuestionSource  string    `parquet:"question_source" json:"question_source"`
	Rubric          []RaRItem `parquet:"rubric,list" json:"rubric"`
	ID              string    `parquet:"id" json:"id"`
}

// SRaRLinesRow is one row of a srar-lines export: the rubric as the tagged
// lines of SRaR's distillation output, "<<SUGGEST>>: ..." one per line.
type SRaRLinesRow struct {
	Problem     string `parquet:"problem" json:"problem"`
	Rubric      string `parquet:"rubric" json:"rubric"`
	GroundTruth string `parquet:"ground_truth" json:"ground_truth"`
	ID          string `parquet:"id" json:"id"`
}

// Values of the verl columns that do not come from the record.
const (
	verlAbility    = "math"
	verlStyle      = "rubric"
	dataSourceRoot = "rubricforge"
	roleSystem     = "system"
	roleUser       = "user"
)

// rowMaker turns records into the rows of one format.
type rowMaker struct {
	prompts *promptSource // verl only
}

// exportRow is what one row is made from: a record (a grounded record's
// view of one question) and the role whose row it is.
type exportRow struct {
	rec  *schema.Record
	role string
}

// dataSource is verl's data_source of rec.
func dataSource(rec *schema.Record) string {
	if rec.Source != "" {
		return dataSourceRoot + "/" + rec.Source
	}
	return dataSourceRoot
}

func (m rowMaker) verl(row exportRow, index int64) (VerlRow, error) {
	rec := row.rec
	if rec.Grounded != nil {
		return m.verlGrounded(rec, index)
	}
	rubric, err := marshalJSON(nonNil(rec.Rubric))
	if err != nil {
		return VerlRow{}, fmt.Errorf("record %s: encoding the rubric: %w", rec.ID, err)
	}
	label, err := marshalJSON(schema.LabelOf(rec))
	if err != nil {
		return VerlRow{}, fmt.Errorf("record %s: encoding the label: %w", rec.ID, err)
	}
	prompt, err := m.prompts.roleMessages(rec, row.role)
	if err != nil {
		return VerlRow{}, err
	}
	return VerlRow{
		DataSource:  dataSource(rec),
		Prompt:      prompt,
		Ability:     ability(row.role),
		RewardModel: VerlRewardModel{Style: verlStyle, GroundTruth: rec.Answer},
		ExtraInfo: VerlExtraInfo{
			Split: rec.Split, Index: index, ID: rec.ID, Question: rec.Problem, Answer: rec.Answer,
			Rubric: rubric, Scheme: schema.DefaultScheme(rec.Style), SpecVersion: schema.SpecVersion,
		},
		Label:    label,
		Solution: rec.Answer,
	}, nil
}

func (rowMaker) rar(row exportRow, _ int64) (RaRRow, error) {
	rec := row.rec
	if rec.Grounded != nil {
		return rarGrounded(rec)
	}
	items := make([]RaRItem, len(rec.Rubric))
	for i, it := range rec.Rubric {
		items[i] = RaRItem{Title: it.Type, Description: it.Text, Weight: float64(it.Polarity) * it.Weight}
	}
	return RaRRow{Question: rec.Problem, ReferenceAnswer: rec.Answer, QuestionSource: rec.Source, Rubric: items, ID: rec.ID}, nil
}

func (rowMaker) srarLines(row exportRow, _ int64) (SRaRLinesRow, error) {
	rec := row.rec
	if rec.Style != schema.StyleSRaR {
		return SRaRLinesRow{}, fmt.Errorf("%w: record %s has a %s rubric; srar-lines holds SRaR rubrics only (use --format rar or verl)", ErrFormatRefused, rec.ID, rec.Style)
	}
	return SRaRLinesRow{Problem: rec.Problem, Rubric: SRaRLines(rec.Rubric), GroundTruth: rec.Answer, ID: rec.ID}, nil
}

// SRaRLines writes items as SRaR's distillation output: one "<<TYPE>>: text"
// line per item, white space inside the text collapsed to single spaces so
// that every item stays on its line. schema.ParseSRaR reads it back.
func SRaRLines(items []schema.Item) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("<<" + it.Type + ">>: ")
		b.WriteString(strings.Join(strings.Fields(it.Text), " "))
	}
	return b.String()
}

// dropInvalid removes the items the validity judge marked invalid, numbers
// the rest 1..n as the pipeline's drop_invalid does, and maps the rollouts'
// satisfaction verdicts to the new ids (dropping those of removed items). It
// returns how many items it removed and whether the rubric still holds
// (schema.CheckRubric for the record's style). rec's slices are replaced,
// never modified in place.
func dropInvalid(rec *schema.Record) (dropped int, holds bool) {
	if rec.Grounded != nil {
		return dropInvalidCriteria(rec)
	}
	newID := make(map[int32]int32, len(rec.Rubric))
	kept := make([]schema.Item, 0, len(rec.Rubric))
	for _, it := range rec.Rubric {
		if it.Valid != nil && !*it.Valid {
			continue
		}
		newID[it.ID] = int32(len(kept) + 1)
		it.ID = int32(len(kept) + 1)
		kept = append(kept, it)
	}
	dropped = len(rec.Rubric) - len(kept)
	if dropped > 0 {
		rec.Rubric = kept
		rec.Rollouts = remapSatisfaction(rec.Rollouts, newID)
	}
	return dropped, schema.CheckRubric(rec.Style, rec.Rubric, 0) == nil
}

func remapSatisfaction(rollouts []schema.Rollout, newID map[int32]int32) []schema.Rollout {
	out := make([]schema.Rollout, len(rollouts))
	for i, ro := range rollouts {
		sat := make([]schema.Satisfaction, 0, len(ro.Satisfaction))
		for _, s := range ro.Satisfaction {
			if id, ok := newID[s.ID]; ok {
				s.ID = id
				sat = append(sat, s)
			}
		}
		ro.Satisfaction = sat
		out[i] = ro
	}
	return out
}

// fullRecord is rec as the jsonl format writes it: lists empty, never null.
func fullRecord(rec *schema.Record) *schema.Record {
	r := *rec
	r.Rubric = nonNil(r.Rubric)
	r.Grounded = fullGrounded(rec.Grounded)
	r.Rollouts = make([]schema.Rollout, len(rec.Rollouts))
	for i, ro := range rec.Rollouts {
		ro.Satisfaction = nonNil(ro.Satisfaction)
		r.Rollouts[i] = ro
	}
	return &r
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// marshalJSON encodes v compactly without escaping <, > and &, which rubric
// text is full of; the result is still plain JSON.
func marshalJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
