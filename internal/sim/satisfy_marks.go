package sim

import (
	"strconv"
	"strings"
)

// Markers that a test writes into a solution to get satisfaction verdicts it
// can predict (package reward's tests and benchmarks use them). A solution
// without any marker is judged by the usual simulated rules.
const (
	// markSat, followed by item ids and "]", e.g. "[sim:sat 1,3]", marks
	// those items satisfied at the step the marker is in, named as a model
	// reading the prompt names it (shownSteps): the number of the step tag
	// around it, or of the header above it as written; 0 before the first
	// step. Every item no marker names is unsatisfied, with step -1.
	markSat = "[sim:sat "
	// JudgeFailsMarker in a solution makes every satisfaction reply about
	// it, repairs included, unusable.
	JudgeFailsMarker = "[sim:judge-fails]"
)

// unusableReply is what the judge says about a solution marked to fail.
const unusableReply = "I am unable to grade this solution."

// markedSatisfy returns the verdicts the markers in sol ask for, or
// ok=false when sol has no marker. fail reports the judge-fails marker.
func markedSatisfy(sol string, items []item) (out []satisfactionJSON, fail, ok bool) {
	if strings.Contains(sol, JudgeFailsMarker) {
		return nil, true, true
	}
	if !strings.Contains(sol, markSat) {
		return nil, false, false
	}
	stepOf := map[string]int{}
	steps := shownSteps(sol)
	for rest, off := sol, 0; ; {
		i := strings.Index(rest, markSat)
		if i < 0 {
			break
		}
		at := off + i
		body := rest[i+len(markSat):]
		end := strings.IndexByte(body, ']')
		if end < 0 {
			break
		}
		step := stepAt(steps, at)
		for _, id := range strings.Split(body[:end], ",") {
			if id = strings.TrimSpace(id); id != "" {
				stepOf[id] = step
			}
		}
		consumed := i + len(markSat) + end + 1
		rest, off = rest[consumed:], off+consumed
	}
	for _, it := range items {
		v := satisfactionJSON{ID: it.idJSON(), Step: -1}
		if step, hit := stepOf[it.ID]; hit {
			v.Satisfied, v.Step = true, step
		}
		out = append(out, v)
	}
	return out, false, true
}

// SatisfiedMarker is the marker that, written into a step of a solution,
// makes the simulated satisfaction judge call the items ids satisfied at
// that step (and every item no marker names unsatisfied, step -1).
func SatisfiedMarker(ids ...int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return markSat + strings.Join(parts, ",") + "]"
}
