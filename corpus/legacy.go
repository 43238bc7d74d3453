package corpus

import (
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/schema"
)

// recordV2 is the record of spec version 2: the record without its grounded
// column. Shards of that layout are read (their records have Grounded nil)
// but never written.
type recordV2 struct {
	ID         string           `parquet:"id"`
	Source     string           `parquet:"source"`
	Split      string           `parquet:"split"`
	Problem    string           `parquet:"problem"`
	Answer     string           `parquet:"answer"`
	Reference  *string          `parquet:"reference,optional"`
	Style      string           `parquet:"style"`
	Rubric     []schema.Item    `parquet:"rubric,list"`
	Rollouts   []schema.Rollout `parquet:"rollouts,list"`
	NCorrect   int32            `parquet:"n_correct"`
	PassRate   float64          `parquet:"pass_rate"`
	Provenance provenanceV3     `parquet:"provenance"`
	Usage      schema.Usage     `parquet:"usage"`
}

// provenanceV3 is schema.Provenance as written up to spec 3's judge
// panels, before the judges' seeds and panels joined it.
type provenanceV3 struct {
	RolloutModel    string    `parquet:"rollout_model"`
	DistillModel    string    `parquet:"distill_model"`
	JudgeModel      *string   `parquet:"judge_model,optional"`
	EmpiricalModel  *string   `parquet:"empirical_model,optional"`
	RolloutTemplate string    `parquet:"rollout_template"`
	DistillTemplate string    `parquet:"distill_template"`
	JudgeTemplate   *string   `parquet:"judge_template,optional"`
	SatisfyTemplate *string   `parquet:"satisfy_template,optional"`
	Alpha           *float64  `parquet:"alpha,optional"`
	JobFingerprint  string    `parquet:"job_fingerprint"`
	SpecVersion     string    `parquet:"spec_version"`
	ToolVersion     string    `parquet:"tool_version"`
	CreatedAt       time.Time `parquet:"created_at,timestamp(millisecond)"`
}

// recordV3Closed is the record of spec version 3 as written before the
// empirical stage's open-book answers: its grounded questions lack the
// open_book_answers column. Shards of that layout read with
// GroundedQuestion.OpenBookAnswers empty; both layouts may sit in one run
// (a run resumed by this version adds shards with the column).
type recordV3Closed struct {
	recordV2
	Grounded *groundedV3Closed `parquet:"grounded,optional"`
}

type groundedV3Closed struct {
	DocID        string                     `parquet:"doc_id"`
	PassageID    string                     `parquet:"passage_id"`
	PassageIndex int32                      `parquet:"passage_index"`
	Title        string                     `parquet:"title"`
	Passage      string                     `parquet:"passage"`
	DocHash      string                     `parquet:"doc_hash"`
	Analysis     schema.Analysis            `parquet:"analysis"`
	Questions    []groundedQuestionV3Closed `parquet:"questions,list"`
}

type groundedQuestionV3Closed struct {
	Index     int32                   `parquet:"index"`
	Question  string                  `parquet:"question"`
	Rationale string                  `parquet:"rationale"`
	Criteria  []schema.Criterion      `parquet:"criteria,list"`
	Answers   []schema.GroundedAnswer `parquet:"answers,list"`
}

// recordV3Single is the record of spec version 3 as written before judge
// panels: it lacks the panel column and provenance's judge seeds and
// panels. Shards of that layout read with
// Record.Panel nil.
type recordV3Single struct {
	recordV2
	Grounded *schema.Grounded `parquet:"grounded,optional"`
}

// readableSchemas are the record layouts a shard may have, newest first:
// the current one, spec 3's before judge panels, spec 3's before the
// open-book answers, then spec 2's.
func readableSchemas() []*parquet.Schema {
	return []*parquet.Schema{recordSchema(), parquet.SchemaOf(new(recordV3Single)), parquet.SchemaOf(new(recordV3Closed)), parquet.SchemaOf(new(recordV2))}
}
