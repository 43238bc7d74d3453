package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// EndpointHealth is how one endpoint's client copes with it: why a run is
// slow when it is (the concurrency now and why it was lowered, 429s and
// timeouts in the last minute, the learned deadline per stage).
type EndpointHealth struct {
	BaseURL string     `json:"base_url"`
	Stages  []string   `json:"stages"`
	Health  llm.Health `json:"health"`
}

// degraded reports whether the endpoint is held back now.
func (e EndpointHealth) degraded() bool {
	h := e.Health
	return h.InFlightLimit < h.MaxInFlight || h.RateLimitedLastMinute > 0 || h.TimeoutsLastMinute > 0
}

func (e EndpointHealth) String() string {
	return fmt.Sprintf("%s (%s): %s", e.BaseURL, strings.Join(e.Stages, ", "), e.Health)
}

// clientStages names the stages of the job's style that send requests
// through the client of stage, for the endpoint lines a user reads: a
// grounded job's analyze, synthesize and enrich ask the distill endpoint,
// and its empirical stage's closed-book answers go to the rollout one.
func clientStages(style, stage string) []string {
	if style != schema.StyleGrounded {
		return []string{stage}
	}
	switch stage {
	case job.StageDistill:
		return []string{job.StageAnalyze, job.StageSynthesize, job.StageEnrich}
	case job.StageRollout:
		return []string{"answer"}
	}
	return []string{stage}
}

// endpointHealth is the health of every endpoint's client, one entry per
// client, in stage order.
func (e *engine) endpointHealth() []EndpointHealth {
	byClient := map[*llm.Client]int{}
	var out []EndpointHealth
	endpoints := e.job.Endpoints()
	for _, stage := range sortedKeys(e.clients) {
		c := e.clients[stage]
		uses := clientStages(e.job.Style, stage)
		if i, ok := byClient[c]; ok {
			out[i].Stages = append(out[i].Stages, uses...)
			continue
		}
		byClient[c] = len(out)
		out = append(out, EndpointHealth{BaseURL: endpoints[stage].BaseURL, Stages: uses, Health: c.Health()})
	}
	for _, stage := range panelStages { // a panel judge at an endpoint of its own
		for _, jd := range e.judges[stage] {
			ref := job.PanelJudgeRef(stage, jd.name)
			if i, ok := byClient[jd.client]; ok {
				if jd.usageKey != "" && !slices.Contains(out[i].Stages, ref) {
					out[i].Stages = append(out[i].Stages, ref)
				}
				continue
			}
			byClient[jd.client] = len(out)
			out = append(out, EndpointHealth{BaseURL: jd.endpoint.BaseURL, Stages: []string{ref}, Health: jd.client.Health()})
		}
	}
	return out
}

// degradedEndpoints renders the endpoints held back now, for the status
// line: "held back" when the client lowered its concurrency, "retried"
// when it met 429s or timeouts in the last minute at its full concurrency
// (a few faults the retries absorb do not hold a run back).
func degradedEndpoints(eps []EndpointHealth) []string {
	var out []string
	for _, e := range eps {
		h := e.Health
		switch {
		case h.InFlightLimit < h.MaxInFlight:
			out = append(out, "held back: "+e.String())
		case e.degraded():
			out = append(out, fmt.Sprintf("retried: %s (%s): last minute: %d 429s, %d timeouts (at the full concurrency, %d)",
				e.BaseURL, strings.Join(e.Stages, ", "), h.RateLimitedLastMinute, h.TimeoutsLastMinute, h.MaxInFlight))
		}
	}
	return out
}
