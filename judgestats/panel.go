package judgestats

import "slices"

// Vote is one judge's answer to a yes/no question in a panel (is this item
// valid; does this response meet this item). OK is false when the judge
// gave no usable answer: it failed, timed out, or its reply did not parse.
type Vote struct {
	OK  bool // the judge answered
	Yes bool // its answer, when OK
}

// Majority is a panel's verdict: yes only when strictly more than half of
// the panel's judges said yes. A judge that failed counts as a vote against
// (the panel fails closed: a failure never turns an odd panel into an even
// one whose tie someone must break), and a tie is no: it is never decided
// by which judge comes first. An empty panel says no.
func Majority(votes []Vote) bool {
	yes := 0
	for _, v := range votes {
		if v.OK && v.Yes {
			yes++
		}
	}
	return 2*yes > len(votes)
}

// Score is one judge's graded answer in [0, 1] (a grounded criterion's
// score); OK is false when the judge gave none.
type Score struct {
	OK    bool
	Value float64
}

// PanelScore is a panel's graded verdict: the lower median of the judges'
// scores, a failed judge's score counted as 0. On yes/no scores (0 or 1)
// it is Majority: 1 only when more than half said 1, and a tie gives 0. An
// empty panel gives 0.
func PanelScore(scores []Score) float64 {
	if len(scores) == 0 {
		return 0
	}
	vals := make([]float64, len(scores))
	for i, s := range scores {
		if s.OK {
			vals[i] = s.Value
		}
	}
	slices.Sort(vals)
	return vals[(len(vals)-1)/2]
}

// Met is a panel's verdict on whether a response meets a rubric item, from
// each judge's "met" vote. negative says meeting the item counts against
// the response (a PITFALL, a negative weight). A judge's vote counts for
// or against the response, and Majority decides: a positive item is met
// only when a strict majority says so, and a negative one is met unless a
// strict majority says it is not. Either way a failed judge and a tie go
// against the response, so a judge that breaks never raises a reward.
func Met(votes []Vote, negative bool) bool {
	forResponse := make([]Vote, len(votes))
	for i, v := range votes {
		forResponse[i] = Vote{OK: v.OK, Yes: v.OK && v.Yes != negative}
	}
	return Majority(forResponse) != negative
}

// StepVote is one judge's answer about a rubric item tied to a step of a
// solution: its vote (is the item met) and the step it named, 1 and up
// for a step's position, 0 for the whole solution, -1 for none.
type StepVote struct {
	Vote
	Step int32
}

// AgreedStep is the step of a panel's verdict on an item: among the
// judges that answered and whose answer is the verdict, the earliest step
// one of them named (1 and up), else 0 (the whole solution) when one of
// them said so, else -1 (none; also when no judge's answer is the
// verdict). A named step beats "the whole solution" and "none", so one
// judge that cannot place the item does not erase the step the others
// agree on. Judges that failed or said otherwise do not count, and the
// judges' order does not matter.
func AgreedStep(votes []StepVote, verdict bool) int32 {
	step := int32(-1)
	for _, v := range votes {
		if !v.OK || v.Yes != verdict {
			continue
		}
		switch s := v.Step; {
		case s >= 1 && (step < 1 || s < step):
			step = s
		case s == 0 && step < 0:
			step = 0
		}
	}
	return step
}
