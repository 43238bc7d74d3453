package prompts

import (
	"strconv"

	"github.com/rubricforge/rubricforge/schema"
)

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
		order = make([]int, len(solutions))
		for i := range order {
			order[i] = i
		}
	}
	type shownSolution struct{ Name, Solution, FinalAnswer, Boundary string }
	shown := make([]shownSolution, len(order))
	out := make([]GroupShown, len(solutions))
	for k, i := range order {
		sol := solutions[i]
		from, to, seen := fitResponse(sol.Solution, v.MaxResponseTokens)
		text := tagStepsHiding(sol.Solution, from, to, seen.note("solution"))
		name := "R" + strconv.Itoa(k+1)
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
