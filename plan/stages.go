package plan

import (
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/schema"
)

// stageAt is a stage that sends requests and an endpoint it sends them to.
type stageAt struct {
	stage    string
	endpoint job.Endpoint
}

// requestStages are the stages of the job's style that the job runs and
// that send requests, in pipeline order, with their endpoints (with
// decompose, those of a decomposition: pipeline.DecomposeStageNames). A grounded
// job's analyze, synthesize and enrich ask the distiller; its empirical
// stage sends the closed-book answers to the rollout endpoint and their
// scoring to the empirical one, so it is listed at both.
func requestStages(jb *job.Job, decompose bool) []stageAt {
	names := pipeline.RequestStageNames(jb)
	if decompose {
		names = pipeline.DecomposeStageNames(jb)
	}
	var out []stageAt
	for _, name := range names {
		if name == job.StageEmpirical && jb.Style == schema.StyleGrounded {
			out = append(out, stageAt{name, jb.Rollout.Endpoint})
		}
		out = append(out, stageAt{name, stageEndpoint(jb, name)})
	}
	return out
}

// stageEndpoint is the endpoint whose model a stage's requests are priced
// at: the distiller's for the grounded stages that ask it. The grounded
// empirical stage is priced at the empirical endpoint's model, its answers
// too (usage is counted by stage, not by endpoint).
func stageEndpoint(jb *job.Job, stage string) job.Endpoint {
	switch stage {
	case job.StageAnalyze, job.StageSynthesize, job.StageEnrich, pipeline.StageDecompose:
		return jb.Distill.Endpoint
	}
	return jb.Endpoints()[stage]
}
