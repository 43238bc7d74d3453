package rejudge

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// Group judging, measured (validate rejudge --judge-group N): N response
// groups are drawn (a math record's rollouts, a grounded question's
// closed-book answers) and every judge is asked about each group three
// ways: each response in a request of its own (satisfy, score_grounded),
// as rewardd asks by default; the whole group in one request
// (satisfy_group, score_grounded_group) in the order rewardd's
// --judge-group draws for it (prompts.GroupOrder); and the same group
// request with the order reversed. The report compares, verdict by
// verdict, group judging with one request per response, and the group
// request's two orders (flips and position bias). A grounded criterion
// counts as met when it scored at least half its weight.

// groupWay is one of the three ways a group is asked.
type groupWay int

const (
	wayAlone groupWay = iota
	wayForward
	wayReversed
)

// groupUnit is one request of a group rejudge: response (for wayAlone) of
// group, or the whole group in one order, asked of judge.
type groupUnit struct {
	group, judge, response int
	way                    groupWay
}

// groupAnswers hold a group rejudge's verdicts: by group, judge and
// response, each response's verdicts in item (criterion) order, asked
// alone and in the group request in each order; nil where the request
// failed or was never sent.
type groupAnswers struct {
	alone, forward, reversed [][][][]bool
	failed                   [][]bool // by group and judge: some request failed
}

// RunGroup draws cfg.Group response groups from in and measures group
// judging against one request per response with each judge of cfg (or of
// its panel), through llm as Run does (cache, retries, rate control, cost,
// budget stop). The error is for what stops it all, as Run's; when ctx is
// cancelled the report comes with it, over the groups judged before.
func RunGroup(ctx context.Context, in *audit.Input, cfg Config) (*audit.GroupReport, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	specs := cfg.judges()
	sets := make([]*prompts.Set, len(specs))
	for i, sp := range specs {
		set, err := prompts.Load(sp.PromptsDir)
		if err != nil {
			return nil, fmt.Errorf("judge %s: %w", sp.Name, err)
		}
		sets[i] = set
	}
	groups, eligible, problems, err := audit.SampleResponseGroups(ctx, in, cfg.Group, cfg.Seed)
	if err != nil {
		return nil, err
	}
	rep := &audit.GroupReport{Tool: cfg.Tool, Corpus: in.Paths, Judges: []audit.GroupJudge{}, InputProblems: append([]audit.Problem{}, problems...),
		Sample: &audit.GroupSample{Seed: cfg.Seed, Requested: cfg.Group, Eligible: eligible, Drawn: len(groups)}}
	for _, g := range groups {
		rep.Sample.Responses += len(g.Responses)
	}
	if eligible == 0 {
		return rep, ErrNoGroups
	}
	meter := llm.NewMeter(cfg.prices(specs), llm.Budget{MaxCostUSD: cfg.MaxCostUSD})
	j, closeAll, err := newRejudger(cfg, specs, sets, meter)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	units := groupUnits(groups, len(j.judges))
	ans := newGroupAnswers(groups, len(j.judges))
	outs, stopped, err := j.runAll(ctx, len(units), func(i int) *panelist { return j.judges[units[i].judge] },
		func(ctx context.Context, i int) error { return j.askGroupUnit(ctx, groups, units[i], ans) },
		func(i int) []any { return []any{"group", groups[units[i].group].ID} })
	rep.LLM = usageOf(meter.Snapshot().Total)
	if outs == nil {
		return rep, err
	}
	rep.Sample.Stopped = audit.NullString(stopped)
	for i, o := range outs {
		if o.err != nil {
			ans.failed[units[i].group][units[i].judge] = true
		}
	}
	j.groupFigures(rep, groups, ans, meter.Snapshot())
	return rep, err
}

// groupUnits lists the requests of a group rejudge: for each group and
// judge, each response alone, then the group in its order and reversed.
func groupUnits(groups []audit.ResponseGroup, judges int) []groupUnit {
	var out []groupUnit
	for g := range groups {
		for k := range judges {
			for r := range groups[g].Responses {
				out = append(out, groupUnit{group: g, judge: k, response: r, way: wayAlone})
			}
			out = append(out, groupUnit{group: g, judge: k, way: wayForward}, groupUnit{group: g, judge: k, way: wayReversed})
		}
	}
	return out
}

func newGroupAnswers(groups []audit.ResponseGroup, judges int) *groupAnswers {
	mk := func() [][][][]bool {
		out := make([][][][]bool, len(groups))
		for g := range groups {
			out[g] = make([][][]bool, judges)
			for k := range judges {
				out[g][k] = make([][]bool, len(groups[g].Responses))
			}
		}
		return out
	}
	a := &groupAnswers{alone: mk(), forward: mk(), reversed: mk(), failed: make([][]bool, len(groups))}
	for g := range groups {
		a.failed[g] = make([]bool, judges)
	}
	return a
}

// askGroupUnit asks one request and stores its verdicts in ans (each
// request writes its own cells).
func (j *rejudger) askGroupUnit(ctx context.Context, groups []audit.ResponseGroup, u groupUnit, ans *groupAnswers) error {
	p, g := j.judges[u.judge], &groups[u.group]
	if u.way == wayAlone {
		v, err := j.askAlone(ctx, p, g, g.Responses[u.response])
		ans.alone[u.group][u.judge][u.response] = v
		return err
	}
	order := groupOrder(g)
	if u.way == wayReversed {
		slices.Reverse(order)
	}
	vs, err := j.askTogether(ctx, p, g, order)
	dst := ans.forward
	if u.way == wayReversed {
		dst = ans.reversed
	}
	copy(dst[u.group][u.judge], vs)
	return err
}

// groupOrder is the order rewardd --judge-group shows a group's responses
// in: drawn from their texts.
func groupOrder(g *audit.ResponseGroup) []int {
	return prompts.GroupOrder(responseTexts(g))
}

func responseTexts(g *audit.ResponseGroup) []string {
	texts := make([]string, len(g.Responses))
	for i, r := range g.Responses {
		texts[i] = r.Text
	}
	return texts
}

// view is how a group rejudge shows responses: the judge layout of cfg,
// whole.
func (j *rejudger) view() prompts.View { return prompts.View{Layout: j.cfg.Layout} }

// askAlone asks judge p about one response of g in a request of its own,
// as rewardd does: its verdicts in item (criterion) order.
func (j *rejudger) askAlone(ctx context.Context, p *panelist, g *audit.ResponseGroup, r audit.Response) ([]bool, error) {
	if g.Grounded() {
		passage, _ := prompts.FitPassage(g.Passage, j.cfg.judgePassageTokens())
		msgs, _, err := p.prompts.ScoreGroundedView(j.view(), passage, g.Problem, r.Text, g.Criteria)
		if err != nil {
			return nil, err
		}
		var met []bool
		err = j.ask(ctx, p, j.cfg.Layout.Of(prompts.ScoreGrounded), msgs, "grounded scores", func(reply string) error {
			s, err := schema.ParseGroundedScoresOf(reply, r.Text, g.Criteria)
			met = metCriteria(s, g.Criteria)
			return err
		})
		return met, err
	}
	msgs, _, err := p.prompts.SatisfyView(j.view(), g.Problem, r.Text, r.Extracted, g.Items)
	if err != nil {
		return nil, err
	}
	var sat []bool
	err = j.ask(ctx, p, j.cfg.Layout.Of(prompts.Satisfy), msgs, "satisfaction verdicts", func(reply string) error {
		v, err := schema.ParseSatisfactionOf(reply, r.Text, itemIDs(g.Items), schema.CountSteps(r.Text))
		sat = satisfied(v, g.Items)
		return err
	})
	return sat, err
}

// askTogether asks judge p about every response of g in one request,
// shown in order: each response's verdicts, in the group's order.
func (j *rejudger) askTogether(ctx context.Context, p *panelist, g *audit.ResponseGroup, order []int) ([][]bool, error) {
	texts := responseTexts(g)
	var msgs []llm.Message
	var shown []prompts.GroupShown
	var err error
	template := prompts.SatisfyGroup
	if g.Grounded() {
		template = prompts.ScoreGroundedGroup
		passage, _ := prompts.FitPassage(g.Passage, j.cfg.judgePassageTokens())
		msgs, shown, err = p.prompts.ScoreGroundedGroupView(j.view(), passage, g.Problem, g.Criteria, texts, order)
	} else {
		solutions := make([]prompts.GroupSolution, len(g.Responses))
		for i, r := range g.Responses {
			solutions[i] = prompts.GroupSolution{Solution: r.Text, FinalAnswer: r.Extracted}
		}
		msgs, shown, err = p.prompts.SatisfyGroupView(j.view(), g.Problem, g.Items, solutions, order)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(shown))
	for i, s := range shown {
		names[i] = s.Name
	}
	out := make([][]bool, len(g.Responses))
	err = j.ask(ctx, p, template, msgs, "group verdicts", func(reply string) error {
		if g.Grounded() {
			ss, err := schema.ParseGroupGroundedScores(reply, names, texts, g.Criteria)
			for i := range ss {
				out[i] = metCriteria(ss[i], g.Criteria)
			}
			return err
		}
		steps := make([]int, len(texts))
		for i, t := range texts {
			steps[i] = schema.CountSteps(t)
		}
		vs, err := schema.ParseGroupSatisfaction(reply, names, texts, itemIDs(g.Items), steps)
		for i := range vs {
			out[i] = satisfied(vs[i], g.Items)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ask sends one satisfaction request of judge p with template's hash in
// its cache scope, repairs and all, parsing the reply with parse.
func (j *rejudger) ask(ctx context.Context, p *panelist, template string, msgs []llm.Message, what string, parse func(string) error) error {
	temp := p.spec.Temperature
	req := llm.Request{Stage: p.spec.Stage, Model: p.spec.Model, Messages: msgs, Temperature: &temp, MaxTokens: p.spec.MaxTokens,
		Seed: j.cfg.JudgeSeed, Scope: llm.Scope{EndpointKind: llm.EndpointKind(p.spec.EndpointKind, p.spec.BaseURL), Template: p.prompts.Hash(template)}}
	return p.client.ChatParsed(ctx, req, llm.Ask{What: what, Repairs: j.cfg.Repairs, Repair: p.prompts.RepairMessages, Parse: parse})
}

func itemIDs(items []schema.Item) []int32 {
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}

// satisfied are the verdicts vs in the order of items.
func satisfied(vs []schema.Satisfaction, items []schema.Item) []bool {
	by := map[int32]bool{}
	for _, v := range vs {
		by[v.ID] = v.Satisfied
	}
	out := make([]bool, len(items))
	for i, it := range items {
		out[i] = by[it.ID]
	}
	return out
}

// metCriteria says which criteria s scored at least half their weight.
func metCriteria(s schema.GroundedScores, criteria []schema.Criterion) []bool {
	if len(s.Scores) != len(criteria) {
		return nil
	}
	out := make([]bool, len(criteria))
	for i, c := range criteria {
		out[i] = 2*s.Scores[i] >= c.Weight && s.Scores[i] > 0
	}
	return out
}

// groupFigures fills rep from the answers: the groups every judge answered
// whole are judged, the others failed; each judge's figures, and with a
// panel the majority's, are over the judged groups.
func (j *rejudger) groupFigures(rep *audit.GroupReport, groups []audit.ResponseGroup, ans *groupAnswers, snap llm.Snapshot) {
	var judged []int
	for g := range groups {
		if slices.Contains(ans.failed[g], true) || !ans.complete(g) {
			rep.Sample.Failed++
			continue
		}
		judged = append(judged, g)
	}
	rep.Sample.Judged = len(judged)
	for k, p := range j.judges {
		var usage *audit.LLMUsage
		if s, ok := snap.Stages[p.spec.Stage]; ok {
			usage = usageOf(s)
		}
		vote := func(ways [][][][]bool, g, r, i int) bool { return ways[g][k][r][i] }
		rep.Judges = append(rep.Judges, audit.NewGroupJudge(p.spec.Name, p.spec.Model, redactedURL(p.spec.BaseURL), groupVerdicts(groups, judged, ans, vote), usage))
	}
	if len(j.cfg.Panel) > 0 {
		vote := func(ways [][][][]bool, g, r, i int) bool {
			yes := 0
			for k := range j.judges {
				if ways[g][k][r][i] {
					yes++
				}
			}
			return 2*yes > len(j.judges)
		}
		panel := audit.NewGroupJudge("panel", "", "", groupVerdicts(groups, judged, ans, vote), nil)
		rep.Panel = &panel
	}
}

// complete reports whether every judge's every answer on group g is in.
func (a *groupAnswers) complete(g int) bool {
	for _, ways := range [][][][][]bool{a.alone, a.forward, a.reversed} {
		for _, byResponse := range ways[g] {
			if slices.ContainsFunc(byResponse, func(v []bool) bool { return v == nil }) {
				return false
			}
		}
	}
	return true
}

// groupVerdicts lists the verdicts of the judged groups, each from vote
// (one judge's, or the panel's).
func groupVerdicts(groups []audit.ResponseGroup, judged []int, ans *groupAnswers, vote func(ways [][][][]bool, g, r, i int) bool) []audit.GroupVerdict {
	var out []audit.GroupVerdict
	for _, g := range judged {
		grp := &groups[g]
		order := groupOrder(grp)
		pos := make([]int, len(order))
		for k, r := range order {
			pos[r] = k
		}
		for r, resp := range grp.Responses {
			name := fmt.Sprintf("r%d", resp.Index)
			if grp.Grounded() {
				name = fmt.Sprintf("a%d", resp.Index)
			}
			for i := range max(len(grp.Items), len(grp.Criteria)) {
				v := audit.GroupVerdict{Group: grp.ID, Response: name, Pos: pos[r], N: len(order),
					Alone: vote(ans.alone, g, r, i), Forward: vote(ans.forward, g, r, i), Reverse: vote(ans.reversed, g, r, i)}
				if grp.Grounded() {
					v.Item, v.Type, v.Text = int32(i+1), audit.CriterionType, grp.Criteria[i].Description
				} else {
					it := grp.Items[i]
					v.Item, v.Type, v.Text = it.ID, it.Type, it.Text
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// ErrNoGroups: the corpus holds nothing a group rejudge can judge.
var ErrNoGroups = errors.New("the corpus holds no response group to judge: a math record with two rollouts or more, or a grounded question with two closed-book answers or more (a run directory or a JSONL export keeps them, with the empirical stage on; a verl export does not)")
