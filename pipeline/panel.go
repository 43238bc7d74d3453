package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// judgeAt is one judge of the judge or empirical stage as the engine asks
// it: the stage's own model when the stage has no panel, else one of the
// panel's judges (job.PanelJudge, resolved against the stage).
type judgeAt struct {
	name     string // the panel's name for it; the model for a stage's own judge
	stage    string // job.StageJudge or job.StageEmpirical
	endpoint job.Endpoint
	sampling job.Sampling
	prompts  *prompts.Set
	template string        // the template its requests are rendered from (judgeTemplate)
	seed     job.JudgeSeed // the stage's pinned seed
	client   *llm.Client
	// usageKey is the key its answers count under in a unit's usage by
	// stage (distill plan prices each key at its model): "" (the stage)
	// for a stage's own judge, job.PanelJudgeRef(stage, name) in a panel.
	usageKey string
}

// panelStages are the stages whose judges a panel can replace.
var panelStages = []string{job.StageJudge, job.StageEmpirical}

// stagePanel is the job's panel of stage (nil when it has none or the stage
// is off) and its field in the job file.
func stagePanel(jb *job.Job, stage string) ([]job.PanelJudge, string) {
	for _, p := range jb.Panels() {
		if p.Stage == stage {
			return p.Judges, p.Field
		}
	}
	return nil, ""
}

// stageModel is what provenance names as a stage's model: its own, or with
// a panel "panel: " and the judges' models ("panel: m1, m2"; each judge's
// name, model and template are in the record's panel column).
func stageModel(jb *job.Job, stage, own string) string {
	judges, _ := stagePanel(jb, stage)
	if len(judges) == 0 {
		return own
	}
	models := make([]string, len(judges))
	for i, j := range judges {
		models[i] = j.Model
	}
	return "panel: " + strings.Join(models, ", ")
}

// judgeTemplate is the template stage's judges are asked with.
func judgeTemplate(jb *job.Job, stage string) string {
	grounded := jb.Style == schema.StyleGrounded
	switch {
	case stage == job.StageJudge && grounded:
		return job.GroundedJudgeTemplate(jb)
	case stage == job.StageJudge:
		return job.JudgeTemplate(jb)
	}
	return job.SatisfyTemplate(jb)
}

// loadJudgePrompts loads the templates of every panel judge whose
// prompts_dir is not the job's, checks the templates it sends, and stamps
// their hashes in the job's template_hashes (job.PanelTemplateKey), so a
// changed template of one judge is named as the change on resume. It
// returns the template sets by directory, the job's own among them.
func loadJudgePrompts(jb *job.Job, ps *prompts.Set) (map[string]*prompts.Set, error) {
	sets := map[string]*prompts.Set{jb.PromptsDir: ps}
	for _, p := range jb.Panels() {
		tmpl := judgeTemplate(jb, p.Stage)
		for _, jd := range p.Judges {
			if jd.PromptsDir == jb.PromptsDir {
				continue
			}
			ref := job.PanelJudgeRef(p.Field, jd.Name)
			set, ok := sets[jd.PromptsDir]
			if !ok {
				var err error
				if set, err = prompts.Load(jd.PromptsDir); err != nil {
					return nil, &job.UsageError{Problems: []string{fmt.Sprintf("%s.prompts_dir: %v", ref, err)}}
				}
				sets[jd.PromptsDir] = set
			}
			sent := []string{tmpl, prompts.Repair}
			if p.Stage == job.StageEmpirical && job.GroupOn(jb) {
				sent = append(sent, job.GroupTemplate(jb))
				jb.TemplateHashes[job.PanelTemplateKey(p.Field, jd.Name, job.GroupTemplate(jb))] = set.Hash(job.GroupTemplate(jb))
			}
			if err := set.Check(sent...); err != nil {
				return nil, &job.UsageError{Problems: []string{fmt.Sprintf("%s.prompts_dir: %v", ref, err)}}
			}
			jb.TemplateHashes[job.PanelTemplateKey(p.Field, jd.Name, tmpl)] = set.Hash(tmpl)
			jb.TemplateHashes[job.PanelTemplateKey(p.Field, jd.Name, prompts.Repair)] = set.Hash(prompts.Repair)
		}
	}
	return sets, nil
}

// newJudges lists the judges of the judge and empirical stages: each
// stage's own model, or its panel's judges in the job's order.
func newJudges(jb *job.Job, ps *prompts.Set, sets map[string]*prompts.Set, clients, panelClients map[string]*llm.Client) map[string][]judgeAt {
	out := map[string][]judgeAt{}
	own := map[string]struct {
		ep   job.Endpoint
		s    job.Sampling
		seed job.JudgeSeed
	}{job.StageJudge: {jb.Judge.Endpoint, jb.Judge.Sampling, jb.Judge.JudgeSeed}, job.StageEmpirical: {jb.Empirical.Endpoint, jb.Empirical.Sampling, jb.Empirical.JudgeSeed}}
	for _, stage := range panelStages {
		panel, field := stagePanel(jb, stage)
		o, tmpl := own[stage], judgeTemplate(jb, stage)
		if len(panel) == 0 {
			out[stage] = []judgeAt{{name: o.ep.Model, stage: stage, endpoint: o.ep, sampling: o.s, prompts: ps, template: tmpl, seed: o.seed, client: clients[stage]}}
			continue
		}
		for _, jd := range panel {
			out[stage] = append(out[stage], judgeAt{
				name: jd.Name, stage: stage, endpoint: jd.Endpoint, sampling: jd.Sampling, prompts: sets[jd.PromptsDir], template: tmpl, seed: o.seed,
				client: panelClients[job.PanelJudgeRef(field, jd.Name)], usageKey: job.PanelJudgeRef(stage, jd.Name),
			})
		}
	}
	return out
}

// hasPanel reports whether stage asks a panel of judges.
func (e *engine) hasPanel(stage string) bool {
	js := e.judges[stage]
	return len(js) > 0 && js[0].usageKey != "" // a panel's judges count apart
}

// request is jd's request with msgs, keyed and seeded as every judging
// stage's (judgeRequest): the judge's endpoint kind and template hash, the
// stage's seed.
func (jd judgeAt) request(msgs []llm.Message) llm.Request {
	return jd.requestWith(jd.template, msgs)
}

// requestWith is request for msgs rendered from template (a group
// request's).
func (jd judgeAt) requestWith(template string, msgs []llm.Message) llm.Request {
	return judgeRequest(jd.stage, jd.endpoint, jd.sampling, jd.seed, jd.prompts.Hash(template), msgs)
}

// askJudge sends req to judge jd as askParsed does, repairing with the
// judge's templates and counting its answers under its usage key; a panel
// judge's unusable exchange stays in the cache (llm.Ask.KeepUnusable).
func (e *engine) askJudge(ctx context.Context, jd judgeAt, req llm.Request, repairs int, what string, u *usage, parse func(string) error) error {
	onResponse := u.add
	if jd.usageKey != "" {
		onResponse = func(r *llm.Response) { u.addAs(jd.usageKey, r) }
	}
	if e.hasPanel(jd.stage) {
		what = fmt.Sprintf("%s (judge %s)", what, jd.name)
	}
	return jd.client.ChatParsed(ctx, req, llm.Ask{
		What: what, Repairs: repairs, Parse: parse, Repair: jd.prompts.RepairMessages, OnResponse: onResponse,
		RepairsOnline: e.job.Batch.Repairs == job.ModeOnline,
		// A panel judge's failure is its vote: a later batch wave or a
		// resume replays it from the cache instead of paying again.
		KeepUnusable: jd.usageKey != "",
	})
}

// absorbs reports whether err of a judge of stage becomes that judge's
// failed vote (a panel's judge whose verdict cannot be had) rather than the
// error of the request.
func (e *engine) absorbs(stage string, err error) bool {
	return err != nil && e.hasPanel(stage) && unusableVerdict(err)
}

// order is the order in which judge jd sees the n items of request part of
// record id: perm[k] is the index of the item shown k-th; nil for rubric
// order (judge.order: rubric, or a single item).
func (e *engine) order(id string, jd judgeAt, part, n int) []int {
	if !e.job.Shuffled() || n < 2 {
		return nil
	}
	return job.OrderPermutation(e.job.Judge.OrderSeed, id, jd.stage, jd.name, part, n)
}

// shown is s in the order perm (s itself when perm is nil).
func shown[T any](s []T, perm []int) []T {
	if perm == nil {
		return s
	}
	out := make([]T, len(s))
	for k, i := range perm {
		out[k] = s[i]
	}
	return out
}

// failedVerdict is a panel judge's failed vote on an item or criterion.
func failedVerdict(judge string, err error) schema.JudgeVerdict {
	return schema.JudgeVerdict{Judge: judge, Reason: "no verdict: " + err.Error()}
}

// verdictTable holds each judge's verdict on each of n items or criteria:
// at[i][j] is judge j's on item i, with errs[i][j] its error when it failed.
type verdictTable struct {
	at   [][]schema.JudgeVerdict
	errs [][]error
}

func newVerdictTable(items, judges int) verdictTable {
	t := verdictTable{at: make([][]schema.JudgeVerdict, items), errs: make([][]error, items)}
	for i := range items {
		t.at[i], t.errs[i] = make([]schema.JudgeVerdict, judges), make([]error, judges)
	}
	return t
}

// unjudged is the error of the first item no judge gave a verdict on:
// it fails the unit as a single judge's failure does.
func (t verdictTable) unjudged() error {
	for i := range t.at {
		failed := 0
		for _, err := range t.errs[i] {
			if err != nil {
				failed++
			}
		}
		if failed > 0 && failed == len(t.errs[i]) {
			return t.errs[i][0]
		}
	}
	return nil
}

// panelVerdict is the panel's validity verdict from its judges' verdicts:
// a strict majority of valid votes, a failed judge voting invalid and a
// tie invalid (judgestats.Majority). With one judge (no panel) it is that
// judge's verdict and reason.
func panelVerdict(vs []schema.JudgeVerdict) (bool, string) {
	if len(vs) == 1 && vs[0].Valid != nil {
		return *vs[0].Valid, vs[0].Reason
	}
	votes := make([]judgestats.Vote, len(vs))
	yes, failed := 0, 0
	for j, v := range vs {
		votes[j] = judgestats.Vote{OK: v.Valid != nil, Yes: v.Valid != nil && *v.Valid}
		if votes[j].Yes {
			yes++
		}
		if !votes[j].OK {
			failed++
		}
	}
	reason := fmt.Sprintf("panel: %d of %d judges said valid", yes, len(vs))
	if failed > 0 {
		reason += fmt.Sprintf(" (%d gave no verdict and count against)", failed)
	}
	return judgestats.Majority(votes), reason
}

// pitfall reports whether satisfying the item is bad for a response (a
// PITFALL: negative polarity, or a negative weight).
func pitfall(it schema.Item) bool { return it.Polarity < 0 || it.Weight < 0 }

// panelSatisfaction is the panel's satisfaction verdicts on one response
// from its judges' (byJudge[j] nil when judge j failed), one per item, by
// judgestats.Met: a pitfall counts as present unless a strict majority
// says it is absent, and a positive item as met only when a strict
// majority says so, so a judge that breaks never raises a reward. The step
// of a verdict, satisfied or not, is judgestats.AgreedStep's.
func panelSatisfaction(items []schema.Item, byJudge [][]schema.Satisfaction) []schema.Satisfaction {
	out := make([]schema.Satisfaction, len(items))
	votes := make([]judgestats.Vote, len(byJudge))
	steps := make([]judgestats.StepVote, len(byJudge))
	for k, it := range items {
		for j, sat := range byJudge {
			steps[j] = judgestats.StepVote{}
			if sat != nil {
				steps[j] = judgestats.StepVote{Vote: judgestats.Vote{OK: true, Yes: sat[k].Satisfied}, Step: sat[k].Step}
			}
			votes[j] = steps[j].Vote
		}
		satisfied := judgestats.Met(votes, pitfall(it))
		out[k] = schema.Satisfaction{ID: it.ID, Satisfied: satisfied, Step: judgestats.AgreedStep(steps, satisfied)}
	}
	return out
}

// panelScores are the panel's scores of one grounded answer from its
// judges' (byJudge[j] nil when judge j failed), one per criterion: the
// lower median, a failed judge's score counted as 0
// (judgestats.PanelScore).
func panelScores(n int, byJudge [][]float64) []float64 {
	out := make([]float64, n)
	for i := range n {
		scores := make([]judgestats.Score, len(byJudge))
		for j, s := range byJudge {
			if s != nil {
				scores[j] = judgestats.Score{OK: true, Value: s[i]}
			}
		}
		out[i] = judgestats.PanelScore(scores)
	}
	return out
}

// recordPanel is the Panel a record of this job starts with: its judges
// (every judge of the judge and empirical stages the job runs, with the
// hash of its template) and the order seed, or nil when the job shows
// items in rubric order and no stage has a panel.
func (e *engine) recordPanel() *schema.Panel {
	anyPanel := len(e.job.Panels()) > 0
	if !anyPanel && !e.job.Shuffled() {
		return nil
	}
	p := &schema.Panel{}
	for _, stage := range panelStages {
		if stage == job.StageJudge && !e.job.Judge.Enabled || stage == job.StageEmpirical && !e.job.Empirical.Enabled {
			continue
		}
		tmpl := judgeTemplate(e.job, stage)
		for _, jd := range e.judges[stage] {
			p.Judges = append(p.Judges, schema.PanelMember{Name: jd.name, Stage: stage, Model: jd.endpoint.Model, Template: jd.prompts.Hash(tmpl)})
		}
	}
	if len(p.Judges) == 0 {
		return nil
	}
	if e.job.Shuffled() {
		p.OrderSeed = ptr(e.job.Judge.OrderSeed)
	}
	return p
}
