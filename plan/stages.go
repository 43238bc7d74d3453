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
		judges := panelOf(jb, name)
		if len(judges) == 0 {
			out = append(out, stageAt{name, stageEndpoint(jb, name)})
		}
		for _, jd := range judges { // a panel's judges ask in the stage's place
			out = append(out, stageAt{job.PanelJudgeRef(name, jd.Name), jd.Endpoint})
		}
	}
	return out
}

// panelOf is the panel of stage, nil when it has none.
func panelOf(jb *job.Job, stage string) []job.PanelJudge {
	for _, p := range jb.Panels() {
		if p.Stage == stage {
			return p.Judges
		}
	}
	return nil
}

// panelJudgeAt is the judge of a panel that ref (job.PanelJudgeRef(stage,
// name)) names, if it names one.
func panelJudgeAt(jb *job.Job, ref string) (job.PanelJudge, bool) {
	for _, p := range jb.Panels() {
		for _, jd := range p.Judges {
			if job.PanelJudgeRef(p.Stage, jd.Name) == ref {
				return jd, true
			}
		}
	}
	return job.PanelJudge{}, false
}

// stageEndpoint is the endpoint whose model a stage's requests are priced
// at: the distiller's for the grounded stages that ask it, a panel judge's
// own for the requests of that judge (judge[NAME]). The grounded
// empirical stage is priced at the empirical endpoint's model, its answers
// too (usage is counted by stage, not by endpoint).
func stageEndpoint(jb *job.Job, stage string) job.Endpoint {
	if jd, ok := panelJudgeAt(jb, stage); ok {
		return jd.Endpoint
	}
	switch stage {
	case job.StageAnalyze, job.StageSynthesize, job.StageEnrich, pipeline.StageDecompose:
		return jb.Distill.Endpoint
	}
	return jb.Endpoints()[stage]
}
