package schema

// Panel holds every judge's own verdicts when a stage asked a panel of
// judges (job: judge.panel, empirical.panel; validate rejudge --panel). The
// verdicts stored in the rubric, the rollouts and the criteria (Item.Valid,
// Rollout.Satisfaction, Criterion.Valid, GroundedAnswer.Scores) are then
// the panel's: a strict majority of its judges, a judge that failed counted
// as a vote against, a tie counted against (judgestats.Majority), and for
// graded scores the lower median with a failed judge's score as 0
// (judgestats.PanelScore). A stage with one judge stores no per-judge
// verdicts; when the job shuffled the judges' item orders (judge.order:
// shuffled, the default) a record still has a Panel naming its judges and
// the OrderSeed. Record.Panel is nil when every stage had one judge and
// showed the items in rubric order, and in corpora written before panels
// (their shards lack the column).
//
// Judge names are the panel's names for its judges (job.PanelJudge.Name),
// the same in every list of a record.
type Panel struct {
	// Judges are the judges of the record's panels, in the job's order
	// (the order decides nothing; it is kept so reports list judges the
	// same way).
	Judges []PanelMember `parquet:"judges,list" json:"judges"`
	// Validity holds each rubric item's verdicts (math styles), in rubric
	// order.
	Validity []ItemVerdicts `parquet:"validity,list" json:"validity,omitempty"`
	// Satisfaction holds each judged rollout's verdicts by judge (math
	// styles' empirical stage), in rollout order.
	Satisfaction []RolloutVerdicts `parquet:"satisfaction,list" json:"satisfaction,omitempty"`
	// Criteria holds each grounded criterion's validity verdicts, question
	// by question in criterion order.
	Criteria []CriterionVerdicts `parquet:"criteria,list" json:"criteria,omitempty"`
	// Scores holds each grounded answer's scores by judge (the grounded
	// empirical stage), closed-book and open-book answers alike.
	Scores []AnswerScores `parquet:"scores,list" json:"scores,omitempty"`
	// OrderSeed is the seed the judges' item orders were drawn from: a
	// judge shown several items at once sees them in an order shuffled per
	// judge and per record from it (see the job's judge.order_seed). Nil
	// when the items were shown in rubric order.
	OrderSeed *int64 `parquet:"order_seed,optional" json:"order_seed,omitempty"`
}

// PanelMember is one judge of a record's panel: its name, the stage it
// judged for (judge, empirical), its model and the hash of the template
// it was asked with.
type PanelMember struct {
	Name     string `parquet:"name" json:"name"`
	Stage    string `parquet:"stage" json:"stage"`
	Model    string `parquet:"model" json:"model"`
	Template string `parquet:"template" json:"template"`
}

// JudgeVerdict is one judge's validity verdict on one item or criterion.
// Valid is nil when the judge failed to give one (it then counted as a
// vote against); Reason is its reason, or what went wrong.
type JudgeVerdict struct {
	Judge  string `parquet:"judge" json:"judge"`
	Valid  *bool  `parquet:"valid,optional" json:"valid"`
	Reason string `parquet:"reason" json:"reason"`
}

// ItemVerdicts are the panel's verdicts on the rubric item ItemID.
type ItemVerdicts struct {
	ItemID   int32          `parquet:"item_id" json:"item_id"`
	Verdicts []JudgeVerdict `parquet:"verdicts,list" json:"verdicts"`
}

// CriterionVerdicts are the panel's verdicts on criterion CriterionID of
// grounded question Question.
type CriterionVerdicts struct {
	Question    int32          `parquet:"question" json:"question"`
	CriterionID string         `parquet:"criterion_id" json:"criterion_id"`
	Verdicts    []JudgeVerdict `parquet:"verdicts,list" json:"verdicts"`
}

// RolloutVerdicts are each judge's satisfaction verdicts on rollout Rollout
// (its Index).
type RolloutVerdicts struct {
	Rollout int32               `parquet:"rollout" json:"rollout"`
	Judges  []JudgeSatisfaction `parquet:"judges,list" json:"judges"`
}

// JudgeSatisfaction is one judge's verdicts on one rollout, one per rubric
// item in item order; Failed when the judge gave none (Satisfaction empty).
type JudgeSatisfaction struct {
	Judge        string         `parquet:"judge" json:"judge"`
	Failed       bool           `parquet:"failed" json:"failed"`
	Satisfaction []Satisfaction `parquet:"satisfaction,list" json:"satisfaction"`
}

// AnswerScores are each judge's scores of answer Answer (its Index) of
// grounded question Question; OpenBook says which list it is in.
type AnswerScores struct {
	Question int32         `parquet:"question" json:"question"`
	Answer   int32         `parquet:"answer" json:"answer"`
	OpenBook bool          `parquet:"open_book" json:"open_book"`
	Judges   []JudgeScores `parquet:"judges,list" json:"judges"`
}

// JudgeScores is one judge's scores of one grounded answer, one per
// criterion in criterion order (each from 0 to its weight); Failed when the
// judge gave none (Scores empty).
type JudgeScores struct {
	Judge  string    `parquet:"judge" json:"judge"`
	Failed bool      `parquet:"failed" json:"failed"`
	Scores []float64 `parquet:"scores,list" json:"scores"`
}
