package judge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// Group judging (rewardd --judge-group, its Config.Group): one request asks
// the satisfaction judge about every response of a group (the
// satisfy_group template), each in its own block under a name, R1, R2,
// ..., in an order drawn per request from the responses themselves (so the
// same group is asked the same request, and a position bias does not fall
// on the same response every time); the reply gives one line per name,
// each a satisfaction reply of its own (schema.ParseSatisfaction). A
// reply that does not give every name exactly once, or whose line for one
// of them does not parse, fails the whole group: no verdict is taken from
// a broken reply. The verdicts of each response are kept in memory as
// Verdicts keeps them (under the group template's salt).

// GroupVerdicts judges rs, responses to one rubric, in one request, and
// returns each one's verdicts, in the order of rs; the responses already
// in memory are not asked about. A panel judges each response alone
// (Verdicts).
func (j *Judge) GroupVerdicts(ctx context.Context, question string, items []schema.Item, rs []*reward.Rollout) ([][]schema.Satisfaction, error) {
	out := make([][]schema.Satisfaction, len(rs))
	if j.members != nil || len(rs) < 2 {
		var errs []error
		for i, r := range rs {
			v, err := j.Verdicts(ctx, question, items, r)
			out[i] = v
			errs = append(errs, err)
		}
		return out, errors.Join(errs...)
	}
	rubric := j.groupRubricKey(question, items)
	var ask []int
	for i, r := range rs {
		if v, ok := j.sat.cached(responseKey(rubric, r.Response), &j.memHits); ok {
			out[i] = v
			continue
		}
		ask = append(ask, i)
	}
	if len(ask) == 0 {
		return out, nil
	}
	asked := make([]*reward.Rollout, len(ask))
	for k, i := range ask {
		asked[k] = rs[i]
	}
	var verdicts [][]schema.Satisfaction
	err := j.slot(ctx, func() (err error) {
		verdicts, err = j.askGroup(ctx, question, items, asked)
		return err
	})
	if err != nil {
		return nil, err
	}
	for k, i := range ask {
		out[i] = verdicts[k]
		j.sat.store(responseKey(rubric, rs[i].Response), verdicts[k])
	}
	return out, nil
}

// groupRubricKey is rubricKey under the group template's salt.
func (j *Judge) groupRubricKey(question string, items []schema.Item) xxhash.Digest {
	var d xxhash.Digest
	d.Reset()
	hashString(&d, j.groupSalt)
	hashString(&d, question)
	for _, it := range items {
		hashInt(&d, uint64(it.ID))
		hashString(&d, it.Type)
		hashString(&d, it.Text)
	}
	return d
}

// groupOrder is the order the responses of a group request are shown in:
// a permutation drawn from the responses' texts.
func groupOrder(rs []*reward.Rollout) []int {
	var d xxhash.Digest
	d.Reset()
	for _, r := range rs {
		hashString(&d, r.Response)
	}
	return rand.New(rand.NewPCG(d.Sum64(), 0)).Perm(len(rs))
}

func (j *Judge) askGroup(ctx context.Context, question string, items []schema.Item, rs []*reward.Rollout) ([][]schema.Satisfaction, error) {
	solutions := make([]prompts.GroupSolution, len(rs))
	for i, r := range rs {
		solutions[i] = prompts.GroupSolution{Solution: r.Response, FinalAnswer: r.Extracted}
	}
	msgs, shown, err := j.prompts.SatisfyGroupView(j.view(), question, items, solutions, groupOrder(rs))
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	req := j.request(JudgeStage, prompts.SatisfyGroup, msgs)
	var verdicts [][]schema.Satisfaction
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What:    "group satisfaction verdicts",
		Repairs: j.opt.Repairs,
		Parse: func(reply string) error {
			v, err := parseGroupReply(reply, shown, ids, rs)
			verdicts = v
			return err
		},
		Repair: j.prompts.RepairMessages,
		OnResponse: func(resp *llm.Response) {
			if resp.Cached {
				j.diskHits.Add(1)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	for i := range verdicts {
		if shown[i].Shown.Cut {
			j.responsesCut.Add(1)
		}
		verdicts[i] = unseenPitfalls(verdicts[i], items, shown[i].Shown, rs[i].Steps)
	}
	return verdicts, nil
}

// reGroupLine opens a response's line of a group reply: its name and a
// colon at the start of a line.
var reGroupLine = regexp.MustCompile(`(?m)^[ \t]*(R\d+)[ \t]*:`)

// parseGroupReply reads a group reply: every name of shown exactly once at
// the start of a line, each followed by that response's satisfaction
// verdicts up to the next name (schema.ParseSatisfactionOf: a verdict that
// any response of the group holds is its quote, not the judge's verdict).
func parseGroupReply(reply string, shown []prompts.GroupShown, ids []int32, rs []*reward.Rollout) ([][]schema.Satisfaction, error) {
	index := map[string]int{}
	for i, s := range shown {
		index[s.Name] = i
	}
	texts := make([]string, len(rs)) // what the judge was shown: a verdict any of them holds is a quote
	for i, r := range rs {
		texts[i] = r.Response
	}
	judged := strings.Join(texts, "\n")
	locs := reGroupLine.FindAllStringSubmatchIndex(reply, -1)
	out := make([][]schema.Satisfaction, len(shown))
	for k, loc := range locs {
		name := reply[loc[2]:loc[3]]
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("the reply names a solution %s that was not shown (there were %d)", name, len(shown))
		}
		if out[i] != nil {
			return nil, fmt.Errorf("the reply gives solution %s twice", name)
		}
		end := len(reply)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		v, err := schema.ParseSatisfactionOf(strings.TrimSpace(reply[loc[1]:end]), judged, ids, len(rs[i].Steps))
		if err != nil {
			return nil, fmt.Errorf("solution %s: %w", name, err)
		}
		out[i] = v
	}
	for i, s := range shown {
		if out[i] == nil {
			return nil, fmt.Errorf("the reply gives no verdicts for solution %s: want one line per solution, every one of R1 to R%d", s.Name, len(shown))
		}
	}
	return out, nil
}
