package sim

import (
	"fmt"
	"regexp"
	"strings"
)

// refinements are what the simulated distiller adds to a saturated item's
// text to make a finer one.
var refinements = []string{
	"carried through to the end without an arithmetic slip",
	"with the condition it relies on stated and checked",
	"keeping every value exact rather than rounded",
	"with each case it implies handled separately",
	"with the result of this step used correctly in the next one",
}

var reSaturated = regexp.MustCompile(`<saturated_item type="([^"]*)">`)

// decompose answers the decompose template: 2 or 3 <<TYPE>>: lines, each
// the saturated item's text with a refinement. With Config.Plant the first
// two are of the aligned kind (the simulator's satisfaction judge then
// grades them by correctness) and a third, when there is one, of whatever
// kind its text draws, so that refine has finer items to keep and to drop.
func (s *Server) decompose(prompt string, r *rng, malformed bool) string {
	problem, _ := between(prompt, "<problem>", "</problem>")
	problem = strings.TrimSpace(problem)
	m := reSaturated.FindStringSubmatch(prompt)
	text, _ := between(prompt, m[0], "</saturated_item>")
	typ := strings.ToUpper(m[1])
	n := 2 + r.intn(2)
	var texts []string
	for j := 0; len(texts) < n && j < 20*len(refinements); j++ {
		cand := finerText(text, j)
		if s.cfg.Plant == nil || len(texts) >= 2 || s.baseKind(problem, typ, cand) == PlantedAligned {
			texts = append(texts, cand)
		}
	}
	var b strings.Builder
	if malformed {
		b.WriteString("Here are the finer items:\n")
	}
	for _, t := range texts {
		fmt.Fprintf(&b, "<<%s>>: %s\n", typ, t)
	}
	return b.String()
}

// finerText is the j-th finer version of a saturated item's text.
func finerText(text string, j int) string {
	t := strings.TrimSuffix(oneLine(text), ".") + ", " + refinements[j%len(refinements)]
	if round := j / len(refinements); round > 0 {
		t += fmt.Sprintf(" (part %d)", round+1)
	}
	return t + "."
}
