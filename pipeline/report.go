package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// Run statuses in report.json.
const (
	StatusRunning  = "running"
	StatusFinished = "finished" // every input problem is a record or a failure line
	StatusStopped  = "stopped"  // budget reached or interrupted; run again to resume
	StatusFailed   = "failed"   // a fatal error (bad endpoint, key, model, disk)
)

// Why a run stopped before finishing (report.json's stopped_by).
const (
	StopBudget    = "budget"    // the budget, counted over every session, is spent: raise it to go on
	StopInterrupt = "interrupt" // Ctrl-C or SIGTERM: run the same command again to go on
	StopDied      = "died"      // status only: the report says running, but no process holds the run
)

// Report is RUN/report.json: what the run has done, what it cost and how long
// it took. Problem counts are over the unique problems of the input:
// Unique = Done + Failed + LeftOut + Pending.
type Report struct {
	written        time.Time // when WriteReport last wrote it
	Status         string    `json:"status"`
	StopReason     string    `json:"stop_reason,omitempty"`
	StoppedBy      string    `json:"stopped_by,omitempty"` // StopBudget or StopInterrupt when stopped
	SpecVersion    string    `json:"spec_version"`
	ToolVersion    string    `json:"tool_version"`
	JobFingerprint string    `json:"job_fingerprint"`
	// Style is the job's style (srar, factual_process, grounded); empty
	// in reports written before it was kept.
	Style          string    `json:"style,omitempty"`
	Started        time.Time `json:"started"`
	Updated        time.Time `json:"updated"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`

	Problems ProblemCounts `json:"problems"`
	// FailuresByStage counts failed problems by stage; problems left out by
	// selection are not failures and are not in it.
	FailuresByStage map[string]int64    `json:"failures_by_stage"`
	BadLines        []source.InputError `json:"bad_lines,omitempty"` // the first few; the count is in Problems

	// LeftOutByStage counts the units left out, by the stage that left them
	// out (select; the grounded passage and quality checks).
	LeftOutByStage map[string]int64 `json:"left_out_by_stage,omitempty"`
	// DuplicateDocumentsTotal counts the documents of a grounded input left
	// out this session because an earlier one in input order has their
	// text; DuplicateDocuments names the first few, each with the document
	// kept. Their passages are among Problems.Duplicates.
	DuplicateDocumentsTotal int64                      `json:"duplicate_documents_total,omitempty"`
	DuplicateDocuments      []source.DuplicateDocument `json:"duplicate_documents,omitempty"`
	// SkippedFiles counts the files of a grounded input's directories that
	// are not documents, by extension; nil when there are none.
	SkippedFiles *source.SkippedFiles `json:"skipped_files,omitempty"`
	// Rejected is a sample of the problems (passages) left out: the first
	// few over every session, with their rollouts' tails (rejected.go).
	Rejected []Rejected `json:"rejected_sample,omitempty"`

	// FailureCauses is the most common cause of each stage's failures (of
	// this session's and the earlier ones still recorded), and of the
	// verdicts the empirical stage could not have.
	FailureCauses map[string]Cause `json:"failure_causes,omitempty"`
	// StageFailures lists the stages that failed as a whole though no
	// problem failed for them: an empirical stage that judged none of its
	// rollouts or closed-book answers. The run then exits 3.
	StageFailures []StageFailure `json:"stage_failures,omitempty"`
	// Sampled counts every rollout sampled for a problem that got past the
	// rollout stage, kept or not, over every session of the run:
	// recomputed at each start from the shards and failures.jsonl
	// (sampledOf).
	Sampled    Tally                    `json:"sampled_rollouts"`
	CorpusRows int64                    `json:"corpus_rows"`
	Rollouts   RolloutStats             `json:"rollouts"` // of the records in the corpus
	Validity   map[string]*TypeValidity `json:"validity_by_type"`
	// Grounded sums up the grounded records' questions and criteria; nil
	// for the math styles.
	Grounded *GroundedStats   `json:"grounded,omitempty"`
	Repairs  map[string]int64 `json:"repairs_by_stage"`
	// StageSeconds adds up, per stage, the time problems spent in it (this
	// session; problems in parallel add up).
	StageSeconds map[string]float64 `json:"stage_seconds"`
	LLM          llm.Snapshot       `json:"llm"`
	// CostCounted is false when the job has no prices: the cost figures are
	// then zero and mean nothing.
	CostCounted      bool     `json:"cost_counted"`
	ProblemsInFlight int      `json:"problems_in_flight"`
	ProblemsPerMin   float64  `json:"problems_per_minute"`
	ETASeconds       *float64 `json:"eta_seconds,omitempty"`
	Shards           int      `json:"shards"`
	// Endpoints is how each endpoint's client copes with it, as of Updated.
	Endpoints []EndpointHealth `json:"endpoints,omitempty"`
	// Partition is the share of the input a partitioned worker holds.
	Partition *PartitionShare `json:"partition,omitempty"`
	// Budget is the budget the run enforces, and the job's it is a share
	// of; absent without one.
	Budget *job.BudgetShare `json:"budget,omitempty"`
	// Batches sums up the run's provider batches (batch mode only); each
	// batch's state is in RUN/batches/journal.jsonl.
	Batches *llm.BatchSummary `json:"batches,omitempty"`
}

// ProblemCounts adds up: Unique = Done + Failed + LeftOut + Pending.
type ProblemCounts struct {
	// InputLines is the number of input rows counted up front (JSONL lines
	// that are not blank, Parquet rows), bad ones included; 0 until counted.
	InputLines int64 `json:"input_lines"`
	InputRows  int64 `json:"input_rows"` // rows read that hold a problem
	BadLines   int64 `json:"bad_lines"`
	Duplicates int64 `json:"duplicates"`
	Unique     int64 `json:"unique"`
	Done       int64 `json:"done"`
	Failed     int64 `json:"failed"`
	LeftOut    int64 `json:"left_out"` // excluded by selection (math styles) or the quality checks (grounded), with the reason in failures.jsonl
	Pending    int64 `json:"pending"`
	// This session only.
	AlreadyDone        int64 `json:"already_done"`
	SkippedFailed      int64 `json:"skipped_failed"`   // failed in an earlier session, not retried
	SkippedLeftOut     int64 `json:"skipped_left_out"` // left out in an earlier session
	DoneThisSession    int64 `json:"done_this_session"`
	FailedThisSession  int64 `json:"failed_this_session"`
	LeftOutThisSession int64 `json:"left_out_this_session"`
}

// Tally counts rollouts and the correct ones among them.
type Tally struct {
	Total   int64 `json:"total"`
	Correct int64 `json:"correct"`
}

func (t *Tally) add(r rolloutTally) { t.Total += r.total; t.Correct += r.correct }

// RolloutStats describes the rollouts of the records in the corpus.
type RolloutStats struct {
	Total     int64     `json:"total"`
	Correct   int64     `json:"correct"`
	FormatOK  int64     `json:"format_ok"`
	Truncated int64     `json:"truncated"`
	PassRate  [11]int64 `json:"pass_rate_histogram"` // bucket k: pass rate in [k/10, (k+1)/10), the last is exactly 1
	// Of records with empirical validity: rollouts with satisfaction
	// verdicts, rollouts whose verdict was unusable, and the records that
	// have such a rollout.
	SatisfactionJudged     int64 `json:"satisfaction_judged"`
	SatisfactionMissing    int64 `json:"satisfaction_missing"`
	RecordsMissingVerdicts int64 `json:"records_missing_satisfaction"`
}

// TypeValidity counts the items of one type and the validity judge's verdicts.
type TypeValidity struct {
	Items          int64   `json:"items"`
	Valid          int64   `json:"valid"`
	Invalid        int64   `json:"invalid"`
	Unjudged       int64   `json:"unjudged"`
	Rate           float64 `json:"validity_rate"`
	EmpiricalValid int64   `json:"empirically_valid"`
	EmpiricalKnown int64   `json:"empirically_measured"`
}

// stageTimes adds up the time spent per stage; the workers share it.
type stageTimes struct {
	mu      sync.Mutex
	seconds map[string]float64
}

func newStageTimes() *stageTimes { return &stageTimes{seconds: map[string]float64{}} }

func (s *stageTimes) add(stage string, d time.Duration) {
	s.mu.Lock()
	s.seconds[stage] += d.Seconds()
	s.mu.Unlock()
}

func (s *stageTimes) snapshot() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.seconds)
}

// corpusStats accumulates the corpus-level figures of the report, one record
// at a time.
type corpusStats struct {
	Rows     int64
	Rollouts RolloutStats
	Validity map[string]*TypeValidity
	Grounded *GroundedStats
	// judgePassageTokens is the judge passage budget the grounded
	// records were judged under (0: none was judged).
	judgePassageTokens int
}

// GroundedStats are the corpus figures of grounded records. Criteria the
// empirical stage measured either vary across the closed-book answers or
// do not: a criterion every answer meets, or none does, carries no
// training signal, and NotVarying counts them.
type GroundedStats struct {
	Passages   int64 `json:"passages"`
	Questions  int64 `json:"questions"`
	Criteria   int64 `json:"criteria"`
	Measured   int64 `json:"criteria_measured"`
	NotVarying int64 `json:"criteria_not_varying"`
	// ScoredAnswers and UnscoredAnswers count the closed-book answers
	// whose scores could and could not be had.
	ScoredAnswers   int64 `json:"scored_answers"`
	UnscoredAnswers int64 `json:"unscored_answers"`
	// OpenBookScored and OpenBookUnscored count the open-book answers
	// (empirical.open_book) likewise; absent without them.
	OpenBookScored   int64 `json:"open_book_scored_answers,omitempty"`
	OpenBookUnscored int64 `json:"open_book_unscored_answers,omitempty"`
	// JudgePassagesCut counts the passages longer than
	// grounded.judge_passage_tokens, which the judge and empirical stages
	// showed cut.
	JudgePassagesCut int64 `json:"judge_passages_cut"`
}

// CriterionType is the key of grounded criteria in validity_by_type.
const CriterionType = "CRITERION"

func (c *corpusStats) add(r *schema.Record) {
	c.Rows++
	if r.Grounded != nil {
		c.addGrounded(r.Grounded)
		return
	}
	rs := &c.Rollouts
	missing := false
	for _, ro := range r.Rollouts {
		rs.Total++
		if ro.Correct {
			rs.Correct++
		}
		if ro.FormatOK {
			rs.FormatOK++
		}
		if ro.FinishReason == "length" {
			rs.Truncated++
		}
		if r.Provenance.EmpiricalModel != nil && len(r.Rubric) > 0 {
			if len(ro.Satisfaction) > 0 {
				rs.SatisfactionJudged++
			} else {
				rs.SatisfactionMissing++
				missing = true
			}
		}
	}
	if missing {
		rs.RecordsMissingVerdicts++
	}
	rs.PassRate[min(10, max(0, int(r.PassRate*10)))]++
	if c.Validity == nil {
		c.Validity = map[string]*TypeValidity{}
	}
	for _, it := range r.Rubric {
		for _, key := range []string{it.Type, "overall"} {
			tv := c.Validity[key]
			if tv == nil {
				tv = &TypeValidity{}
				c.Validity[key] = tv
			}
			tv.add(it)
		}
	}
}

// countScored adds the answers whose scores could and could not be had.
func countScored(as []schema.GroundedAnswer, scored, unscored *int64) {
	for _, a := range as {
		if len(a.Scores) > 0 {
			*scored++
		} else {
			*unscored++
		}
	}
}

func (c *corpusStats) addGrounded(g *schema.Grounded) {
	if c.Grounded == nil {
		c.Grounded = &GroundedStats{}
	}
	if c.Validity == nil {
		c.Validity = map[string]*TypeValidity{}
	}
	gs := c.Grounded
	gs.Passages++
	if _, cut := prompts.FitPassage(g.Passage, c.judgePassageTokens); cut {
		gs.JudgePassagesCut++
	}
	for _, q := range g.Questions {
		gs.Questions++
		countScored(q.Answers, &gs.ScoredAnswers, &gs.UnscoredAnswers)
		countScored(q.OpenBookAnswers, &gs.OpenBookScored, &gs.OpenBookUnscored)
		for _, cr := range q.Criteria {
			gs.Criteria++
			if cr.Varies != nil {
				gs.Measured++
				if !*cr.Varies {
					gs.NotVarying++
				}
			}
			for _, key := range []string{CriterionType, "overall"} {
				tv := c.Validity[key]
				if tv == nil {
					tv = &TypeValidity{}
					c.Validity[key] = tv
				}
				tv.add(schema.Item{Valid: cr.Valid})
			}
		}
	}
}

func (tv *TypeValidity) add(it schema.Item) {
	tv.Items++
	switch {
	case it.Valid == nil:
		tv.Unjudged++
	case *it.Valid:
		tv.Valid++
	default:
		tv.Invalid++
	}
	if judged := tv.Valid + tv.Invalid; judged > 0 {
		tv.Rate = float64(tv.Valid) / float64(judged)
	}
	if it.EmpiricalValid != nil {
		tv.EmpiricalKnown++
		if *it.EmpiricalValid {
			tv.EmpiricalValid++
		}
	}
}

// sampledOf is what report.json's sampled_rollouts holds at the start of
// a session, recomputed from the run's own files rather than carried over
// from an earlier report (a report a SIGKILL left counts the rollouts of
// problems whose records were not yet durable, and the redone problems
// count them again): the rollouts of the records in the shards, plus those
// of the problems that failed or were left out after their rollouts
// (failures.jsonl). It returns the second part by problem too, for
// countSampled. A session then adds the rollouts of each problem it
// settles.
func sampledOf(records RolloutStats, failures map[string]corpus.Failure) (Tally, map[string]Tally) {
	t := Tally{Total: records.Total, Correct: records.Correct}
	byID := map[string]Tally{}
	for id, f := range failures {
		if f.Rollouts > 0 {
			t.Total += f.Rollouts
			t.Correct += f.RolloutsCorrect
			byID[id] = Tally{Total: f.Rollouts, Correct: f.RolloutsCorrect}
		}
	}
	return t, byID
}

// countSampled adds a settled problem's rollouts to sampled_rollouts, in
// place of those its earlier failure counted.
func (l *loop) countSampled(id string, sampled rolloutTally) {
	if old, ok := l.failedSampled[id]; ok {
		l.report.Sampled.Total -= old.Total
		l.report.Sampled.Correct -= old.Correct
		delete(l.failedSampled, id)
	}
	l.report.Sampled.add(sampled)
}

// scanCorpusStats reads every record of the run directory.
func scanCorpusStats(fsy fsys.FS, dir string, judgePassageTokens int) (corpusStats, error) {
	c := corpusStats{judgePassageTokens: judgePassageTokens}
	err := corpus.ReadAllFS(fsy, dir, func(r *schema.Record) error { c.add(r); return nil })
	return c, err
}

// fillReport brings the report up to date from the counters.
func (l *loop) fillReport() {
	r := &l.report
	now := time.Now().UTC()
	r.Updated = now
	r.ElapsedSeconds = now.Sub(r.Started).Seconds()
	in := &l.input
	skippedFailed, skippedLeftOut := in.skippedFailed.Load(), in.skippedLeftOut.Load()
	pc := ProblemCounts{
		InputLines: in.lines.Load(), InputRows: in.rows.Load(), BadLines: in.badLines.Load(), Duplicates: in.duplicates.Load(),
		Unique: in.unique.Load(), AlreadyDone: in.alreadyDone.Load(), SkippedFailed: skippedFailed, SkippedLeftOut: skippedLeftOut,
		DoneThisSession: l.session.done, FailedThisSession: l.session.failed, LeftOutThisSession: l.session.leftOut,
	}
	pc.Done = pc.AlreadyDone + l.session.done
	pc.Failed = skippedFailed + l.session.failed
	pc.LeftOut = skippedLeftOut + l.session.leftOut
	pc.Pending = pc.Unique - pc.Done - pc.Failed - pc.LeftOut
	r.Problems = pc
	r.Partition = l.part.share(pc.InputRows)
	r.FailuresByStage = maps.Clone(l.failuresByStage)
	if len(l.leftOutByStage) > 0 {
		r.LeftOutByStage = maps.Clone(l.leftOutByStage)
	}
	r.FailureCauses = l.eng.causes.top()
	in.mu.Lock()
	r.BadLines = slices.Clone(in.badSample)
	r.DuplicateDocumentsTotal, r.DuplicateDocuments = in.duplicateDocs, slices.Clone(in.duplicateSample)
	in.mu.Unlock()
	if l.skipped != nil {
		r.SkippedFiles = l.skipped
	}
	r.Rejected = slices.Clone(l.rejected)
	r.CorpusRows, r.Rollouts, r.Validity, r.Grounded = l.stats.Rows, l.stats.Rollouts, l.stats.Validity, l.stats.Grounded
	r.StageSeconds = l.eng.stageTimes.snapshot()
	r.LLM = l.meter.Snapshot()
	r.Repairs = map[string]int64{}
	for stage, s := range r.LLM.Stages {
		if s.Repairs > 0 {
			r.Repairs[stage] = s.Repairs
		}
	}
	r.Shards = len(l.run.Manifest().Shards)
	r.Endpoints = l.eng.endpointHealth()
	r.Batches = l.batchSummary()
	l.fillRate(now)
}

// fillRate sets the problems per minute of this session and the ETA: from
// the pending count once the input is read, before that from the rows
// counted up front.
func (l *loop) fillRate(now time.Time) {
	r := &l.report
	processed := l.session.done + l.session.failed + l.session.leftOut
	r.ProblemsPerMin, r.ETASeconds = 0, nil
	mins := now.Sub(l.started).Minutes()
	if mins <= 0 || processed == 0 {
		return
	}
	r.ProblemsPerMin = float64(processed) / mins
	remaining := int64(-1)
	p := r.Problems
	switch {
	case l.input.readDone.Load():
		remaining = p.Pending
	case p.InputLines > 0:
		remaining = max(0, l.part.ofRows(p.InputLines-p.BadLines, p.InputRows)-p.Duplicates-l.resolvedAtStart-processed)
	}
	if remaining >= 0 {
		eta := float64(remaining) / r.ProblemsPerMin * 60
		r.ETASeconds = &eta
	}
}

// finish sets the final status of the session.
func (l *loop) finish(runErr error) {
	l.fillReport()
	r := &l.report
	r.StageFailures = r.stagesThatJudgedNothing()
	r.ETASeconds = nil
	switch {
	case runErr != nil:
		r.Status, r.StopReason, r.StoppedBy = StatusFailed, runErr.Error(), ""
	case r.StopReason != "":
		r.Status = StatusStopped
	default:
		r.Status = StatusFinished
	}
	if r.Status == StatusFinished && r.Problems.Pending != 0 {
		r.Status, r.StopReason = StatusStopped, fmt.Sprintf("%d problems were not processed", r.Problems.Pending)
	}
}

// ReadReport reads RUN/report.json; a missing file is not an error (zero report, false).
func ReadReport(dir string) (Report, bool, error) { return readReport(fsys.OS, dir) }

func readReport(fsy fsys.FS, dir string) (Report, bool, error) {
	var r Report
	b, err := fsys.ReadFile(fsy, reportPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("reading report: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("%s: %w", reportPath(dir), err)
	}
	return r, true, nil
}

// WriteReport writes report.json into the run directory dir atomically.
func WriteReport(fsy fsys.FS, dir string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := fsys.WriteFileAtomic(fsy, reportPath(dir), append(b, '\n'), 0o644); err != nil {
		return err
	}
	r.written = time.Now()
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// StageFailure is a stage that failed as a whole: Reason says how.
type StageFailure struct {
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
}

// SomethingFailed reports whether the run finished with failures: a
// problem failed, or a stage failed as a whole (exit code 3).
func (r *Report) SomethingFailed() bool { return r.Problems.Failed > 0 || len(r.StageFailures) > 0 }

// stagesThatJudgedNothing names the empirical stage when it had rollouts
// or closed-book answers to judge and judged none of them: every
// criterion or item is then unmeasured, and the corpus carries no
// empirical figure at all.
func (r *Report) stagesThatJudgedNothing() []StageFailure {
	var what string
	var unjudged int64
	switch g := r.Grounded; {
	case g != nil && g.ScoredAnswers == 0 && g.UnscoredAnswers > 0:
		what, unjudged = "closed-book answers", g.UnscoredAnswers
	case g == nil && r.Rollouts.SatisfactionJudged == 0 && r.Rollouts.SatisfactionMissing > 0:
		what, unjudged = "rollouts", r.Rollouts.SatisfactionMissing
	default:
		return nil
	}
	reason := fmt.Sprintf("judged none of its %d %s", unjudged, what)
	if c, ok := r.FailureCauses[job.StageEmpirical]; ok {
		reason += fmt.Sprintf("; most common cause (%d of %d): %s", c.Count, c.Of, c.Reason)
	}
	return []StageFailure{{Stage: job.StageEmpirical, Reason: reason}}
}
