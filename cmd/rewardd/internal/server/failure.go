package server

import (
	"errors"

	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// unjudgedResult is the result of an item whose response is not to be
// judged (scoreItem.unjudged says why): judge_ok false and the floor reward
// of its response, whatever --on-judge-failure says (asking again would not
// help), with the reason as its error, so that it counts as an item error,
// not as a judge failure. A grounded question's floor is 0.
func unjudgedResult(p reward.Params, scheme string, lab *schema.Label, it *scoreItem) reward.Result {
	var res reward.Result
	if lab.Grounded != nil {
		if err := reward.CheckGroundedScheme(it.scheme, lab); err != nil {
			return reward.ErrorResult(it.requestID, lab.ID, schema.SchemeGrounded, err.Error())
		}
		res = reward.ScoreGrounded(lab, schema.GroundedScores{}, errors.New("not judged"))
	} else {
		r := reward.AnalyzeFinished(it.response, lab.GroundTruth, it.finish)
		r.JudgeErr = "not judged"
		res = reward.ScoreWith(p, reward.OnJudgeFailureFloor, scheme, lab, &r, nil)
	}
	res.RequestID, res.JudgeError, res.Error = it.requestID, "not judged: "+it.unjudged, it.unjudged
	return res
}
