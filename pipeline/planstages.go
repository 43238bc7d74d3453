package pipeline

import "github.com/rubricforge/rubricforge/schema"

// stageAt is a stage that sends requests and an endpoint it sends them to.
type stageAt struct {
	stage    string
	endpoint Endpoint
}

// requestStages are the stages of the job's style that the job runs and
// that send requests, in pipeline order, with their endpoints. A grounded
// job's analyze, synthesize and enrich ask the distiller; its empirical
// stage sends the closed-book answers to the rollout endpoint and their
// scoring to the empirical one, so it is listed at both.
func requestStages(job *Job) []stageAt {
	var out []stageAt
	for _, st := range stagesOf(job.Style) {
		if st.check || (st.on != nil && !st.on(job)) {
			continue
		}
		if st.name == StageEmpirical && job.Style == schema.StyleGrounded {
			out = append(out, stageAt{st.name, job.Rollout.Endpoint})
		}
		out = append(out, stageAt{st.name, stageEndpoint(job, st.name)})
	}
	return out
}

// stageEndpoint is the endpoint whose model a stage's requests are priced
// at: the distiller's for the grounded stages that ask it. The grounded
// empirical stage is priced at the empirical endpoint's model, its answers
// too (usage is counted by stage, not by endpoint).
func stageEndpoint(job *Job, stage string) Endpoint {
	switch stage {
	case StageAnalyze, StageSynthesize, StageEnrich:
		return job.Distill.Endpoint
	}
	return job.endpoints()[stage]
}
