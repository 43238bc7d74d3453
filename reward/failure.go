package reward

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// What a response whose judgment failed (the judge down, timed out, or its
// reply unusable after every repair) is paid, as --on-judge-failure names it.
const (
	// OnJudgeFailureFloor, the default, pays the lowest reward any judgment
	// could give that response under its scheme, for its correctness and
	// format: srar r_base with every PITFALL fallen into and nothing else
	// satisfied, rgr and grounded 0, rlcer r_outcome with r_cot 0, papo its
	// outcome reward with process 0. A policy that provokes judge failures
	// (responses too long for the judge's context, text that breaks its
	// JSON) then never earns more than a judged response.
	OnJudgeFailureFloor = "floor"
	// OnJudgeFailureOutcome pays the accuracy-only reward: srar r_base, rgr
	// r_acc, rlcer r_outcome, papo r_acc, grounded 0.
	OnJudgeFailureOutcome = "outcome"
	// OnJudgeFailureError answers a request with any failed judgment 503
	// with Retry-After, for trainers that retry; verdicts already in are
	// cached, so the retry asks the judge only for the failed ones.
	OnJudgeFailureError = "error"
)

// ErrEmptyResponse is why an empty response (one that says nothing: Silent) has
// no verdicts: it is not sent to the judge, and is paid the floor under
// every policy (Rollout.Empty, Result.Empty).
var ErrEmptyResponse = errors.New("not judged: the response is empty (nothing but white space, markup and punctuation), paid the lowest any judgment could give")

// JudgeFailurePolicies lists the policies --on-judge-failure takes.
var JudgeFailurePolicies = []string{OnJudgeFailureFloor, OnJudgeFailureOutcome, OnJudgeFailureError}

// CheckJudgeFailurePolicy reports a policy that is not one of
// JudgeFailurePolicies ("" is the default, floor).
func CheckJudgeFailurePolicy(policy string) error {
	switch policy {
	case "", OnJudgeFailureFloor, OnJudgeFailureOutcome, OnJudgeFailureError:
		return nil
	}
	return fmt.Errorf("on-judge-failure %q is not one of %s", policy, strings.Join(JudgeFailurePolicies, ", "))
}

// fallback fills s, the scored values of a rollout whose judgment failed,
// under policy.
func fallback(p Params, policy string, items []schema.Item, r *Rollout, s *scored) {
	if policy == OnJudgeFailureOutcome {
		s.rgr = b2f(r.Correct)
		return
	}
	s.floored = true
	// The floor: every PITFALL fallen into, nothing else satisfied. rgr,
	// grounded, the RLCER r_cot and the PAPO process reward are then 0,
	// their lowest values (a weighted fraction and a min-max normalized sum
	// cannot go below 0).
	if CountTypes(items).Pitfall > 0 {
		s.rubric.Pitfall = -math.Abs(p.RPit)
	}
}

// ScoreWith is Score with a judge-failure policy, one of
// JudgeFailurePolicies.
func ScoreWith(p Params, policy, scheme string, lab *schema.Label, r *Rollout, valid []bool) Result {
	if valid == nil {
		valid = storedValidity(lab.Rubric)
	}
	return finiteOrError(result(p, scheme, lab, r, compute(p, policy, lab, r, valid), new(GroupMemory)))
}
