package prompts

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/schema"
)

// Group judging (a job's judge.group, rewardd --judge-group): one request
// asks the judge about every response of a group, math (SatisfyGroupView)
// or grounded (ScoreGroundedGroupView). What the group's requests share
// comes first, as in the cache layout (the instructions, the reply format,
// the problem or passage and question, the rubric or criteria), then each
// response in its own block, as the single-response judge shows it (cut to
// the view's budget, escaped, between boundary lines of its own id), under
// its name: R1, R2, ... in the order shown. The reply gives one line per
// name, parsed by schema.ParseGroupSatisfaction or
// schema.ParseGroupGroundedScores with the names GroupNames returns.
//
// The order is the caller's: GroupOrder draws one per group from the
// responses' texts (the same group is always asked the same request, and a
// judge's position bias does not fall on the same response every time); an
// order check passes orders of its own.

// GroupOrder is the order a group's responses are shown in, drawn from
// their texts: order[k] is the index of the response shown k-th.
func GroupOrder(texts []string) []int {
	var d xxhash.Digest
	d.Reset()
	for _, t := range texts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(t)))
		_, _ = d.Write(n[:])
		_, _ = d.WriteString(t)
	}
	return rand.New(rand.NewPCG(d.Sum64(), 0)).Perm(len(texts))
}

// A group request is bounded as a single one is: the responses it shows,
// as shown, fit together in the response budget (View.MaxResponseTokens,
// what one response may take beside the shared part of the prompt), so a
// group request is never longer than a single one can be. A group whose
// responses do not fit is asked in parts (GroupParts), each a request of
// its own, rather than in one request the judge would refuse for its
// context.

// groupTokenOverhead is what a response adds to a group request besides
// its own text, in estimated tokens: its name line and boundary lines.
const groupTokenOverhead = 24

// GroupResponseTokens is the estimated tokens (EstimateTokens) response
// takes in a group request whose view has the response budget maxTokens
// (0 or less: none): its text as shown, its extracted answer's line
// (finalAnswer; "" for a grounded response), its name and boundary lines.
func GroupResponseTokens(response, finalAnswer string, maxTokens int) int {
	n := EstimateTokens(response)
	if maxTokens > 0 {
		n = min(n, maxTokens)
	}
	return n + EstimateTokens(finalAnswer) + groupTokenOverhead
}

// GroupParts splits a group's responses, tokens[i] the estimated tokens
// response i takes in a group request (GroupResponseTokens), into parts,
// in their order, each as many responses as fit together in budget tokens
// (one at least: a response over the budget is a part alone; budget 0 or
// less: one part). A part is a list of indexes into tokens.
func GroupParts(tokens []int, budget int) [][]int {
	if budget <= 0 {
		budget = math.MaxInt
	}
	var parts [][]int
	var part []int
	used := 0
	for i, n := range tokens {
		if len(part) > 0 && used+n > budget {
			parts, part, used = append(parts, part), nil, 0
		}
		part = append(part, i)
		used += n
	}
	if len(part) > 0 {
		parts = append(parts, part)
	}
	return parts
}

// GroupNames are the names a group request showed its responses under, by
// response (as the group reply parsers take them).
func GroupNames(shown []GroupShown) []string {
	names := make([]string, len(shown))
	for i, s := range shown {
		names[i] = s.Name
	}
	return names
}

// identity is the order 0, 1, ..., n-1.
func identity(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return order
}

// groupName is the name of the response shown k-th (from 0).
func groupName(k int) string { return "R" + strconv.Itoa(k+1) }

// GroupSolution is one response of a group judged in one request
// (SatisfyGroupView): its text and the final answer extracted from it.
type GroupSolution struct {
	Solution, FinalAnswer string
}

// GroupShown is how SatisfyGroupView showed one response: the name the
// reply gives its verdicts under ("R1", ...) and what was shown of it.
type GroupShown struct {
	Name  string
	Shown Shown
}

// SatisfyGroupView asks the satisfaction judge about every solution of a
// group in one request (the satisfy_group template, in the cache layout):
// the solutions are shown in the order order (order[k] is the index of the
// solution shown k-th; nil: as given), named R1, R2, ... in that order, each
// in its own block and cut to v's budget as SatisfyView cuts one. It
// returns, by solution, its name and what was shown of it.
func (s *Set) SatisfyGroupView(v View, problem string, items []schema.Item, solutions []GroupSolution, order []int) ([]Message, []GroupShown, error) {
	if order == nil {
		order = identity(len(solutions))
	}
	type shownSolution struct{ Name, Solution, FinalAnswer, Boundary string }
	shown := make([]shownSolution, len(order))
	out := make([]GroupShown, len(solutions))
	for k, i := range order {
		sol := solutions[i]
		from, to, seen := fitResponse(sol.Solution, v.MaxResponseTokens)
		text := tagStepsHiding(sol.Solution, from, to, seen.note("solution"))
		name := groupName(k)
		shown[k] = shownSolution{name, text, oneLine(escapeTags(sol.FinalAnswer)), boundaryID(sol.Solution, text)}
		out[i] = GroupShown{Name: name, Shown: seen}
	}
	msgs, err := s.render(SatisfyGroup, struct {
		Problem   string
		Items     []schema.Item
		Solutions []shownSolution
	}{problem, escapeItems(items), shown})
	return msgs, out, err
}

// ScoreGroundedGroupView asks the grounded judge (seed 001's contract, one
// JSON object of scores per response) about every response of a group to
// one question in one request (the score_grounded_group template): the
// responses are shown in the order order (order[k] is the index of the
// response shown k-th; nil: as given), named R1, R2, ... in that order,
// each in its own block cut to v's budget as ScoreGroundedView cuts one.
// It returns, by response, its name and what was shown of it.
func (s *Set) ScoreGroundedGroupView(v View, passage, question string, criteria []schema.Criterion, responses []string, order []int) ([]Message, []GroupShown, error) {
	if order == nil {
		order = identity(len(responses))
	}
	type shownResponse struct{ Name, Response, Boundary string }
	shown := make([]shownResponse, len(order))
	out := make([]GroupShown, len(responses))
	for k, i := range order {
		text, seen := groundedShown(responses[i], v.MaxResponseTokens)
		shown[k] = shownResponse{groupName(k), text, boundaryID(responses[i], text)}
		out[i] = GroupShown{Name: groupName(k), Shown: seen}
	}
	msgs, err := s.render(ScoreGroundedGroup, struct {
		Passage, Question string
		Criteria          []criterionView
		TotalWeight       string
		Responses         []shownResponse
	}{passage, question, criterionViews(criteria), FormatWeight(schema.TotalWeight(criteria)), shown})
	return msgs, out, err
}
