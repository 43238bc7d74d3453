package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// groundedStages are the stages of the grounded style (seed 001 section
// 3.4): the passage's document is analyzed (once for all its passages, see
// docanalysis.go), K question-rubric tuples are synthesized from the
// passage, the analysis and the passage's position, every criterion is
// enriched with the analysis in view, every tuple passes the quality
// checks, the validity judge reads every criterion against the passage, and
// (optionally) closed-book answers measure which criteria vary, and
// open-book ones beside them which reward knowing the passage.
var groundedStages = []stage{
	{name: job.StagePassage, check: true, run: (*engine).checkPassage},
	{name: job.StageAnalyze, run: (*engine).analyze},
	{name: job.StageSynthesize, run: (*engine).synthesize},
	{name: job.StageEnrich, on: func(j *job.Job) bool { return j.Grounded.Enrich }, run: (*engine).enrich},
	{name: job.StageQuality, check: true, run: (*engine).quality},
	{name: job.StageJudge, on: job.JudgeOn, run: (*engine).judgeGrounded},
	{name: job.StageEmpirical, on: job.EmpiricalOn, run: (*engine).empiricalGrounded},
}

// analyze asks for the analysis of the passage's document and starts the
// record's payload. The request is the document's, the same for each of
// its passages, so the cache (and, for passages in flight at once, the
// client's single-flight; in batch mode, one batch row) makes it one
// request per document.
func (e *engine) analyze(ctx context.Context, w *unit) error {
	p := w.p
	msgs, err := e.prompts.GroundedAnalyzeMessages(p.DocumentView())
	if err != nil {
		return err
	}
	var a schema.Analysis
	if err := e.askDistiller(ctx, job.StageAnalyze, msgs, e.job.JSONObject.Analyze, "document analysis", w, func(reply string) (err error) {
		a, err = schema.ParseAnalysis(reply)
		return err
	}); err != nil {
		return err
	}
	w.grounded = &schema.Grounded{
		DocID: p.DocID, PassageID: p.ID, PassageIndex: p.PassageIndex, Title: p.Title,
		Passage: p.Text, DocHash: p.DocHash, Analysis: a,
	}
	return nil
}

// synthesize asks for the K question-rubric tuples. A reply whose tuples
// parse but fail a quality check the later stages cannot mend (a total
// weight below the minimum, too few criteria, a question copying the
// passage, an empty field the enrich stage does not fill) goes back to
// the model for repair like a reply that does not parse; the last reply
// the repairs allow is taken as it is, so the quality stage leaves the
// passage out with its reasons (and the exchange, having parsed, stays in
// the cache: a batch wave that replays it sends nothing again).
func (e *engine) synthesize(ctx context.Context, w *unit) error {
	g, gs := w.grounded, e.job.Grounded
	pos := prompts.PassagePosition{Number: int(w.p.PassageIndex) + 1, Count: int(max(w.p.PassageCount, w.p.PassageIndex+1)), Section: w.p.Section}
	msgs, err := e.prompts.GroundedSynthesizeMessages(g.Title, g.Passage, g.Analysis, pos, prompts.RubricBounds{
		K: gs.QuestionsPerPassage, MinCriteria: gs.MinCriteria, MaxCriteria: gs.MaxCriteria, MinTotalWeight: gs.MinTotalWeight,
	})
	if err != nil {
		return err
	}
	opt := schema.QuestionOptions{K: gs.QuestionsPerPassage, MinCriteria: gs.MinCriteria, MaxCriteria: gs.MaxCriteria}
	replies := 0
	return e.askDistiller(ctx, job.StageSynthesize, msgs, e.job.JSONObject.Synthesize, "questions and rubrics", w, func(reply string) error {
		replies++
		qs, err := schema.ParseQuestions(reply, opt)
		if err != nil {
			return err
		}
		if reasons := e.mendableOnlyByTheModel(g.Passage, qs); len(reasons) > 0 && replies <= e.job.Distill.RepairAttempts {
			return &qualityError{reasons: reasons}
		}
		g.Questions = qs
		return nil
	})
}

// qualityError is a synthesize reply that parsed into tuples failing the
// quality checks; its message, shown to the model in the repair, lists why.
type qualityError struct{ reasons []string }

func (q *qualityError) Error() string {
	return "the tuples fail the quality checks: " + strings.Join(q.reasons, "; ")
}

// mendableOnlyByTheModel lists the quality problems of tuples that no later
// stage mends: all of them, but for the fields the enrich stage completes
// when it is on.
func (e *engine) mendableOnlyByTheModel(passage string, qs []schema.GroundedQuestion) []string {
	gs := e.job.Grounded
	rules := schema.QualityRules{MinCriteria: gs.MinCriteria, MinTotalWeight: gs.MinTotalWeight, MaxCopiedWords: gs.MaxCopiedWords, EnrichFills: gs.Enrich}
	var out []string
	for k, q := range qs {
		for _, r := range schema.QualityProblems(q, passage, rules) {
			out = append(out, fmt.Sprintf("question %d: %s", k+1, r))
		}
	}
	return out
}

// enrich enriches every criterion of every question with the document's
// analysis in view (seed 001): a concrete verification method, and the
// keywords and concepts added to those the criterion has; one request per
// question. The criteria keep appendix E's fields: nothing is added but
// their content.
func (e *engine) enrich(ctx context.Context, w *unit) error {
	g := w.grounded
	return fanOut(ctx, len(g.Questions), func(ctx context.Context, k int) error {
		q := &g.Questions[k]
		msgs, err := e.prompts.GroundedEnrichMessages(g.Passage, q.Question, g.Analysis, q.Criteria)
		if err != nil {
			return err
		}
		ids := make([]string, len(q.Criteria))
		for i, c := range q.Criteria {
			ids[i] = c.ID
		}
		var got []schema.Enrichment
		if err := e.askDistiller(ctx, job.StageEnrich, msgs, false, fmt.Sprintf("enriched criteria of question %d", k+1), w, func(reply string) (err error) {
			got, err = schema.ParseEnrichment(reply, ids, job.EnrichedKeywords, job.EnrichedConcepts)
			return err
		}); err != nil {
			return err
		}
		for _, en := range got {
			i := slices.IndexFunc(q.Criteria, func(c schema.Criterion) bool { return c.ID == en.ID })
			c := &q.Criteria[i]
			c.VerificationMethod = en.VerificationMethod
			c.ExpectedKeywords = union(c.ExpectedKeywords, en.Keywords)
			c.ExpectedConcepts = union(c.ExpectedConcepts, en.Concepts)
		}
		return nil
	})
}

// union is a followed by the entries of b it lacks, compared without case.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.ContainsFunc(out, func(t string) bool { return strings.EqualFold(s, t) }) {
			out = append(out, s)
		}
	}
	return out
}

// quality leaves the passage out when any of its tuples fails the quality
// checks, with every failing tuple's reasons (seed 001 discards such
// examples; they are counted like the math styles' selection).
func (e *engine) quality(_ context.Context, w *unit) error {
	if reasons := e.qualityProblems(w.grounded); len(reasons) > 0 {
		w.leftOut = &problemFailure{stage: job.StageQuality, attempts: 1, reason: "left out by the quality checks: " + strings.Join(reasons, "; ")}
	}
	return nil
}

func (e *engine) qualityProblems(g *schema.Grounded) []string {
	gs := e.job.Grounded
	rules := schema.QualityRules{MinCriteria: gs.MinCriteria, MinTotalWeight: gs.MinTotalWeight, MaxCopiedWords: gs.MaxCopiedWords}
	var out []string
	for k, q := range g.Questions {
		for _, r := range schema.QualityProblems(q, g.Passage, rules) {
			out = append(out, fmt.Sprintf("question %d: %s", k+1, r))
		}
	}
	return out
}

// judgeGrounded asks the validity judge (every judge of judge.panel)
// about every criterion of every question against the passage, in batch
// mode one request per question and judge, in item mode one per criterion
// and judge; the panel's verdicts go on the criteria and each judge's in
// the record's panel. With drop_invalid the invalid criteria go, and the
// tuples must still pass the quality checks.
func (e *engine) judgeGrounded(ctx context.Context, w *unit) error {
	g, js := w.grounded, e.job.Judge
	judges := e.judges[job.StageJudge]
	type jb struct{ q, c, j int } // c < 0: the whole question
	var jobs []jb
	tables := make([]verdictTable, len(g.Questions))
	for k, q := range g.Questions {
		tables[k] = newVerdictTable(len(q.Criteria), len(judges))
		for j := range judges {
			if js.Mode != "item" {
				jobs = append(jobs, jb{k, -1, j})
				continue
			}
			for i := range q.Criteria {
				jobs = append(jobs, jb{k, i, j})
			}
		}
	}
	passage := e.judgePassage(w)
	err := fanOut(ctx, len(jobs), func(ctx context.Context, n int) error {
		at := jobs[n]
		if at.c >= 0 {
			return e.judgeCriterion(ctx, w, passage, judges[at.j], at.j, at.q, at.c, tables[at.q])
		}
		return e.judgeQuestion(ctx, w, passage, judges[at.j], at.j, at.q, tables[at.q])
	})
	for k := 0; err == nil && k < len(tables); k++ {
		err = tables[k].unjudged()
	}
	if err != nil {
		return err
	}
	e.storeCriterionVerdicts(w, tables)
	if !js.DropInvalid {
		return nil
	}
	dropped := 0
	for k := range g.Questions {
		q := &g.Questions[k]
		kept := q.Criteria[:0:0]
		for _, c := range q.Criteria {
			if c.Valid == nil || *c.Valid {
				kept = append(kept, c)
			}
		}
		dropped += len(q.Criteria) - len(kept)
		q.Criteria = kept
	}
	if reasons := e.qualityProblems(g); len(reasons) > 0 {
		return fmt.Errorf("the rubrics no longer pass the quality checks after dropping %d invalid criteria: %s", dropped, strings.Join(reasons, "; "))
	}
	return nil
}

// storeCriterionVerdicts puts the panel's verdict (the one judge's) on
// every criterion and, with a panel, every judge's in the record's panel.
func (e *engine) storeCriterionVerdicts(w *unit, tables []verdictTable) {
	for k := range w.grounded.Questions {
		q := &w.grounded.Questions[k]
		for i := range q.Criteria {
			valid, reason := panelVerdict(tables[k].at[i])
			q.Criteria[i].Valid, q.Criteria[i].ValidReason = &valid, &reason
			if e.hasPanel(job.StageJudge) {
				w.panel.Criteria = append(w.panel.Criteria, schema.CriterionVerdicts{Question: q.Index, CriterionID: q.Criteria[i].ID, Verdicts: tables[k].at[i]})
			}
		}
	}
}

// judgeCriterion asks judge jd (the j-th) about criterion i of question k.
func (e *engine) judgeCriterion(ctx context.Context, w *unit, passage string, jd judgeAt, j, k, i int, t verdictTable) error {
	q := &w.grounded.Questions[k]
	msgs, err := jd.prompts.GroundedJudgeItemMessagesIn(e.job.JudgeLayout(), passage, q.Question, q.Criteria[i])
	if err != nil {
		return err
	}
	return e.askItemVerdict(ctx, w, jd, msgs, fmt.Sprintf("validity verdict for criterion %q of question %d", q.Criteria[i].ID, q.Index+1), t, i, j)
}

// judgeQuestion asks judge jd (the j-th) about every criterion of question
// k at once, shown in the judge's order (engine.order); the template
// numbers the criteria as shown, and the verdicts are mapped back by
// those numbers.
func (e *engine) judgeQuestion(ctx context.Context, w *unit, passage string, jd judgeAt, j, k int, t verdictTable) error {
	q := &w.grounded.Questions[k]
	perm := e.order(w.p.ID, jd, k, len(q.Criteria))
	msgs, err := jd.prompts.GroundedJudgeBatchMessagesIn(e.job.JudgeLayout(), passage, q.Question, shown(q.Criteria, perm))
	if err != nil {
		return err
	}
	ids := make([]int32, len(q.Criteria))
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	err = e.askJudge(ctx, jd, jd.request(msgs), e.job.Judge.RepairAttempts, fmt.Sprintf("validity verdicts for question %d", q.Index+1), &w.u, func(reply string) error {
		vs, err := schema.ParseValidityBatch(reply, ids)
		if err != nil {
			return err
		}
		for pos := range vs {
			i := pos
			if perm != nil {
				i = perm[pos]
			}
			t.at[i][j] = schema.JudgeVerdict{Judge: jd.name, Valid: &vs[pos].Valid, Reason: vs[pos].Reason}
		}
		return nil
	})
	if e.absorbs(job.StageJudge, err) {
		for i := range q.Criteria {
			t.at[i][j], t.errs[i][j] = failedVerdict(jd.name, err), err
		}
		return nil
	}
	return err
}

// empiricalGrounded samples rollout.n closed-book answers to every
// question (the question alone, never the passage) and, with
// empirical.open_book, rollout.n open-book answers (the question with the
// passage), and scores each against the rubric with the passage (seed
// 001's judge contract); then it stores per criterion its mean score over
// the closed-book answers as a fraction of its weight and whether it
// varies across them. An answer whose scores stay unusable (they did not
// parse after the repairs) keeps empty scores; the passage is not lost for
// it.
func (e *engine) empiricalGrounded(ctx context.Context, w *unit) error {
	g, n := w.grounded, e.job.Rollout.N
	passage := e.judgePassage(w)
	var jobs []answerJob
	var byQuestion [][]int // the indexes in jobs of each question's answers
	for k := range g.Questions {
		q := &g.Questions[k]
		first := len(jobs)
		q.Answers = make([]schema.GroundedAnswer, n)
		jobs = append(jobs, answerJobs(q, q.Answers, false, n)...)
		if job.OpenBookOn(e.job) {
			q.OpenBookAnswers = make([]schema.GroundedAnswer, n)
			jobs = append(jobs, answerJobs(q, q.OpenBookAnswers, true, n)...)
		}
		byQuestion = append(byQuestion, seq(first, len(jobs)))
	}
	byAnswer := make([]*schema.AnswerScores, len(jobs)) // with a panel, each answer's scores by judge
	err := fanOut(ctx, len(byQuestion), func(ctx context.Context, k int) error {
		return e.answerAndScore(ctx, w, passage, jobs, byQuestion[k], byAnswer)
	})
	if err != nil {
		return err
	}
	for k := range g.Questions {
		measureCriteria(&g.Questions[k])
	}
	for _, as := range byAnswer { // in the answers' order, however they finished
		if as != nil {
			w.panel.Scores = append(w.panel.Scores, *as)
		}
	}
	return nil
}

// seq is the integers from lo up to hi.
func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// answerJob is one answer the grounded empirical stage samples and scores:
// answer a of question q, stored in into[a]; open: with the passage.
type answerJob struct {
	q    *schema.GroundedQuestion
	into []schema.GroundedAnswer
	a    int
	open bool
}

func answerJobs(q *schema.GroundedQuestion, into []schema.GroundedAnswer, open bool, n int) []answerJob {
	out := make([]answerJob, n)
	for a := range n {
		out[a] = answerJob{q: q, into: into, a: a, open: open}
	}
	return out
}

// bookName names an answer's kind in errors and logs.
func (j answerJob) bookName() string {
	if j.open {
		return "open-book"
	}
	return "closed-book"
}

// answerMessages is the prompt of j's answer: the question alone
// (closed-book) or with the passage the judge is shown (open-book).
func (e *engine) answerMessages(j answerJob, passage string) ([]llm.Message, error) {
	if j.open {
		return e.prompts.GroundedAnswerOpenMessages(passage, j.q.Question)
	}
	return e.prompts.GroundedAnswerMessages(j.q.Question)
}

// answerAndScore samples the answers jobs[at] to one question (closed- and
// open-book) from the rollout endpoint, then scores them with the grounded
// reward judge (each judge of a panel, whose scores go in byAnswer)
// against the passage: for each judge the first answer alone, then the
// others at once (warmFirst), since their requests share all but the
// answer and a server's prefix cache computes the rest once; with
// judge.group, all of them together (scoreAnswerGroups).
func (e *engine) answerAndScore(ctx context.Context, w *unit, passage string, jobs []answerJob, at []int, byAnswer []*schema.AnswerScores) error {
	texts := make([]string, len(at))
	err := fanOut(ctx, len(at), func(ctx context.Context, i int) (err error) {
		texts[i], err = e.sampleAnswer(ctx, w, passage, jobs[at[i]])
		return err
	})
	if err != nil {
		return err
	}
	judges := e.judges[job.StageEmpirical]
	scores := make([][][]float64, len(at)) // by answer, by judge; nil: the judge gave none
	for i := range scores {
		scores[i] = make([][]float64, len(judges))
	}
	err = fanOut(ctx, len(judges), func(ctx context.Context, n int) error {
		one := func(ctx context.Context, i int) (err error) {
			j := jobs[at[i]]
			what := fmt.Sprintf("scores of answer %d to question %d", j.a, j.q.Index+1)
			if j.open {
				what = fmt.Sprintf("scores of open-book answer %d to question %d", j.a, j.q.Index+1)
			}
			scores[i][n], err = e.scoreAnswer(ctx, w, passage, j, texts[i], judges[n], what)
			return err
		}
		if job.GroupOn(e.job) && len(at) > 0 {
			return e.scoreAnswerGroups(ctx, w, passage, jobs[at[0]].q, texts, judges[n], func(i int, s []float64) { scores[i][n] = s }, one)
		}
		return warmFirst(ctx, len(at), one)
	})
	if err != nil {
		return err
	}
	for i, k := range at {
		j := jobs[k]
		j.into[j.a].Scores, byAnswer[k] = e.answerScores(j, scores[i])
	}
	return nil
}

// sampleAnswer samples j's answer from the rollout endpoint and stores it
// (unscored) in j.into[j.a].
func (e *engine) sampleAnswer(ctx context.Context, w *unit, passage string, j answerJob) (string, error) {
	ro := e.job.Rollout
	msgs, err := e.answerMessages(j, passage)
	if err != nil {
		return "", err
	}
	req := request(job.StageEmpirical, ro.Endpoint, ro.Sampling, msgs)
	req.SampleIndex = j.a
	seed := ro.Seed + int64(j.a)
	req.Seed = &seed
	resp, err := e.clients[job.StageRollout].Chat(ctx, req)
	if err != nil {
		return "", fmt.Errorf("%s answer %d to question %d: %w", j.bookName(), j.a, j.q.Index+1, err)
	}
	w.u.add(resp)
	text := resp.Choices[0].Content
	j.into[j.a] = schema.GroundedAnswer{Index: int32(j.a), Text: text, Scores: []float64{}}
	return text, nil
}

// scoreAnswer is judge jd's scores of answer text, one per criterion; nil
// when the judge gave none (the reply did not parse after the repairs, or
// the endpoint refused the request as malformed).
func (e *engine) scoreAnswer(ctx context.Context, w *unit, passage string, j answerJob, text string, jd judgeAt, what string) ([]float64, error) {
	q, a := j.q, j.a
	// Every answer to a question is shown the criteria in the question's
	// order for this judge, so that their requests share all but the
	// answer.
	smsgs, seen, err := jd.prompts.ScoreGroundedView(e.job.JudgeView(), passage, q.Question, text, shown(q.Criteria, e.order(w.p.ID, jd, int(q.Index), len(q.Criteria))))
	if err != nil {
		return nil, err
	}
	e.countCut(seen)
	var scores schema.GroundedScores
	err = e.askJudge(ctx, jd, jd.request(smsgs), e.job.Empirical.RepairAttempts, what, &w.u, func(reply string) (err error) {
		scores, err = schema.ParseGroundedScoresOf(reply, text, q.Criteria)
		return err
	})
	if err != nil && unusableVerdict(err) {
		e.log.Debug("empirical: a judge leaves an answer unscored", "id", w.p.ID, "question", q.Index, "answer", a, "book", j.bookName(), "judge", jd.name, "err", err)
		e.causes.add(job.StageEmpirical, err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return scores.Scores, nil
}

// answerScores are the scores stored on an answer from its judges'
// (byJudge[j] nil when judge j gave none): the one judge's, or the
// panel's (panelScores) with each judge's for the record's panel; empty
// when no judge gave any.
func (e *engine) answerScores(j answerJob, byJudge [][]float64) ([]float64, *schema.AnswerScores) {
	if !e.hasPanel(job.StageEmpirical) {
		if byJudge[0] == nil {
			return []float64{}, nil
		}
		return byJudge[0], nil
	}
	as := &schema.AnswerScores{Question: j.q.Index, Answer: int32(j.a), OpenBook: j.open}
	answered := false
	for n, s := range byJudge {
		js := schema.JudgeScores{Judge: e.judges[job.StageEmpirical][n].name, Failed: s == nil, Scores: s}
		if s == nil {
			js.Scores = []float64{}
		}
		answered = answered || s != nil
		as.Judges = append(as.Judges, js)
	}
	if !answered {
		return []float64{}, as
	}
	return panelScores(len(j.q.Criteria), byJudge), as
}

// measureCriteria stores each criterion's mean score (a fraction of its
// weight) over the scored answers and whether the score varies between
// them; with fewer than two scored answers nothing is measured.
func measureCriteria(q *schema.GroundedQuestion) {
	var scored [][]float64
	for _, a := range q.Answers {
		if len(a.Scores) == len(q.Criteria) && len(a.Scores) > 0 {
			scored = append(scored, a.Scores)
		}
	}
	if len(scored) < 2 {
		return
	}
	for i := range q.Criteria {
		c := &q.Criteria[i]
		var sum float64
		varies := false
		for _, s := range scored {
			sum += s[i]
			varies = varies || s[i] != scored[0][i]
		}
		mean := 0.0
		if c.Weight > 0 {
			mean = sum / float64(len(scored)) / c.Weight
		}
		c.ScoreMean, c.Varies = ptr(mean), ptr(varies)
	}
}

// judgePassage is the passage as the validity judge and the empirical
// stage's scorer are shown it: cut to grounded.judge_passage_tokens
// (prompts.FitPassage, as rewardd's grounded scorer cuts it). A cut is
// logged here and counted in the report (GroundedStats.JudgePassagesCut).
func (e *engine) judgePassage(w *unit) string {
	budget := e.job.Grounded.JudgePassageTokens
	shown, cut := prompts.FitPassage(w.grounded.Passage, budget)
	if cut && !w.judgeCutLogged {
		w.judgeCutLogged = true
		e.log.Info("grounded: the judge is shown the passage cut to grounded.judge_passage_tokens",
			"id", w.p.ID, "estimated_tokens", prompts.EstimateTokens(w.grounded.Passage), "judge_passage_tokens", budget)
	}
	return shown
}

// askDistiller sends a grounded generation request (analyze, synthesize,
// enrich) to the distill endpoint with its sampling and repairs.
func (e *engine) askDistiller(ctx context.Context, stage string, msgs []llm.Message, jsonObject bool, what string, w *unit, parse func(string) error) error {
	ds := e.job.Distill
	req := request(stage, ds.Endpoint, ds.Sampling, msgs)
	req.JSON = jsonObject
	return e.askParsed(ctx, e.clients[job.StageDistill], req, ds.RepairAttempts, what, &w.u, parse)
}

// groundedRecord assembles the record of a passage that passed every stage.
// Its provenance names the synthesize template as the distill template, the
// closed-book answer template as the rollout template and the reward
// judge's as the satisfy template; the analyze, enrich and open-book answer
// templates' hashes are in job.yaml's template_hashes, which the job fingerprint every record
// carries covers.
func (e *engine) groundedRecord(w *unit) *schema.Record {
	p := w.p
	rec := &schema.Record{
		ID: p.ID, Source: p.Source, Split: job.SplitOf(p.ID, e.job.Split), Style: schema.StyleGrounded,
		Rubric: []schema.Item{}, Rollouts: []schema.Rollout{}, Grounded: w.grounded,
		Provenance: schema.Provenance{
			DistillModel:    e.job.Distill.Model,
			DistillTemplate: e.prompts.Hash(prompts.GroundedSynthesize),
			SpecVersion:     schema.SpecVersion,
			ToolVersion:     e.toolVersion,
			JobFingerprint:  e.fingerprint,
			CreatedAt:       time.Now().UTC().Truncate(time.Millisecond),
		},
		Usage: w.u.u, Panel: w.panel,
	}
	if e.job.Judge.Enabled {
		rec.Provenance.JudgeModel = ptr(stageModel(e.job, job.StageJudge, e.job.Judge.Model))
		rec.Provenance.JudgeTemplate = ptr(e.prompts.Hash(job.GroundedJudgeTemplate(e.job)))
		rec.Provenance.JudgeSeed = e.job.Judge.Sent()
	}
	if e.job.Empirical.Enabled {
		rec.Provenance.RolloutModel = e.job.Rollout.Model
		rec.Provenance.RolloutTemplate = e.prompts.Hash(prompts.GroundedAnswer)
		rec.Provenance.EmpiricalModel = ptr(stageModel(e.job, job.StageEmpirical, e.job.Empirical.Model))
		rec.Provenance.SatisfyTemplate = ptr(e.prompts.Hash(job.SatisfyTemplate(e.job)))
		rec.Provenance.EmpiricalSeed = e.job.Empirical.Sent()
	}
	return rec
}

// checkPassage leaves out, before any request is paid for it, a passage
// that is no text (a data URI, base64 data) or longer than a passage may
// be, and one shorter than the minimum.
func (e *engine) checkPassage(_ context.Context, w *unit) error {
	if w.p.LeaveOut != "" {
		w.leftOut = &problemFailure{stage: job.StagePassage, attempts: 1, reason: "left out before any request: " + w.p.LeaveOut}
		return nil
	}
	least := source.MinPassage(e.job.Grounded)
	if n := utf8.RuneCountInString(w.p.Text); n < least {
		w.leftOut = &problemFailure{stage: job.StagePassage, attempts: 1, reason: fmt.Sprintf(
			"left out by length: the passage has %d characters, fewer than grounded.min_passage_chars %d (too little for a question)", n, least)}
	}
	return nil
}
