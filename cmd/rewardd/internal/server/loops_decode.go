package server

import (
	"bytes"
	"encoding/json"

	"github.com/rubricforge/rubricforge/schema"
)

// Bounds on the loops' fields of one /v1/score_group request.
const (
	// MaxProposals bounds a group's rubricator outputs: RLCER samples one
	// per response, so a group of MaxResponses has at most that many.
	MaxProposals = MaxResponses
)

// How the reasoner's rlcer reward uses a group's proposals.
const (
	// proposalsReplace: r_cot over the valid proposed criteria alone (the
	// paper's reasoner reward, eq. 6).
	proposalsReplace = "replace"
	// proposalsAdd: r_cot over the valid proposed criteria and the valid
	// items of the rubric together.
	proposalsAdd = "add"
)

// loopFields are the training-time loops' fields of a /v1/score_group
// request.
type loopFields struct {
	// proposals are RLCER rubricator outputs; nil when none were sent (an
	// empty list is a group with no proposal).
	proposals []string
	mode      string // proposalsReplace or proposalsAdd
	guide     bool
	// offPolicy marks the responses sampled off-policy (RGR's refined
	// response), parallel to the responses; nil when not sent.
	offPolicy []bool
}

// decodeLoops reads the loops' fields of req; nil when it has none.
func decodeLoops(req *groupRequest) (*loopFields, error) {
	present := func(raw json.RawMessage) bool {
		raw = bytes.TrimSpace(raw)
		return len(raw) > 0 && string(raw) != "null"
	}
	if !present(req.Proposals) && !present(req.ProposalsMode) && !present(req.Guide) && !present(req.OffPolicy) {
		return nil, nil
	}
	l := &loopFields{mode: proposalsReplace}
	if present(req.Proposals) {
		if err := json.Unmarshal(req.Proposals, &l.proposals); err != nil {
			return nil, bad("proposals: expected a list of strings, the rubricator outputs (RLCER's JSON format), one per rubricator sample")
		}
		if l.proposals == nil {
			l.proposals = []string{}
		}
		if len(l.proposals) > MaxProposals {
			return nil, bad("proposals: %d proposals, at most %d per group", len(l.proposals), MaxProposals)
		}
		for i, p := range l.proposals {
			if len(p) > schema.MaxRubricatorBytes {
				return nil, bad("proposals[%d]: %d bytes, at most %d", i, len(p), schema.MaxRubricatorBytes)
			}
		}
	}
	if present(req.ProposalsMode) {
		var mode string
		if json.Unmarshal(req.ProposalsMode, &mode) != nil || (mode != proposalsReplace && mode != proposalsAdd) {
			return nil, bad("proposals_mode: expected %q (r_cot over the valid proposed criteria, the default) or %q (over them and the rubric's valid items)", proposalsReplace, proposalsAdd)
		}
		l.mode = mode
	}
	if present(req.Guide) && json.Unmarshal(req.Guide, &l.guide) != nil {
		return nil, bad("guide: expected true or false")
	}
	if present(req.OffPolicy) {
		if err := json.Unmarshal(req.OffPolicy, &l.offPolicy); err != nil {
			return nil, bad("off_policy: expected a list of true or false, one per response (true for the refined, off-policy one)")
		}
		if len(l.offPolicy) != len(req.Responses) {
			return nil, bad("off_policy: %d entries, responses has %d", len(l.offPolicy), len(req.Responses))
		}
	}
	return l, nil
}

// onPolicy reports whether response i was sampled on-policy.
func (l *loopFields) onPolicy(i int) bool {
	return l == nil || l.offPolicy == nil || !l.offPolicy[i]
}

// assessment reports whether the request is RGR's exploration assessment
// of a group's first G-1 responses (guide without off_policy): it is scored
// and answered, but not recorded into the live statistics, since the same
// responses come back in the group's final call.
func (l *loopFields) assessment() bool {
	return l != nil && l.guide && l.offPolicy == nil
}
