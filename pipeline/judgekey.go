package pipeline

import (
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm"
)

// judgeRequest is a request of a judging stage (the validity judge, the
// empirical stage's satisfaction judge and grounded scorer): the judge's
// model and sampling, the stage's pinned seed (none with no_seed), and the
// key scope that keeps its cached verdict to the same judge: the
// endpoint's kind and the hash of the template the messages were rendered
// from (templateHash). The model, the sampling, the seed and the rubric
// text (in the messages) are in every request's key already.
func judgeRequest(stage string, ep job.Endpoint, s job.Sampling, seed job.JudgeSeed, templateHash string, msgs []llm.Message) llm.Request {
	req := request(stage, ep, s, msgs)
	req.Seed = seed.Sent()
	req.Scope = llm.Scope{EndpointKind: ep.EndpointKind(), Template: templateHash}
	return req
}
