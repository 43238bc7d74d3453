package pipeline

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/job"
)

// recordingPilot is a Pilot that holds a fixed set of ids and records what
// the run tells it.
type recordingPilot struct {
	ids     map[string]bool
	mu      sync.Mutex
	started map[string]int
	ends    []ProblemEnd
}

type pilotProblemKey struct{}

func (p *recordingPilot) Holds(id string) bool { return p.ids[id] }
func (p *recordingPilot) Len() int             { return len(p.ids) }

func (p *recordingPilot) Start(ctx context.Context, id string) context.Context {
	p.mu.Lock()
	p.started[id]++
	p.mu.Unlock()
	return context.WithValue(ctx, pilotProblemKey{}, id)
}

func (p *recordingPilot) End(e ProblemEnd) {
	p.mu.Lock()
	p.ends = append(p.ends, e)
	p.mu.Unlock()
}

// TestPilotNarrowsTheRunAndHearsEveryProblem: a run with a Pilot (what
// distill plan's pilot relies on) takes only the problems it holds, sends
// each one's requests with the context Start gave it, and tells End once
// how each ended, with what its requests cost by stage.
func TestPilotNarrowsTheRunAndHearsEveryProblem(t *testing.T) {
	t.Parallel()
	f, tap, opt := inProcessFixture(t, 24, sim.Config{Seed: 3})
	pl := &recordingPilot{ids: map[string]bool{}, started: map[string]int{}}
	for _, r := range f.rows[:7] {
		pl.ids[job.ProblemID(r.Problem, r.Answer)] = true
	}
	var mu sync.Mutex
	untagged := 0
	tap.handle = func(r *http.Request, _ sim.Kind, _ []sim.Message) (*http.Response, error) {
		if id, _ := r.Context().Value(pilotProblemKey{}).(string); !pl.ids[id] {
			mu.Lock()
			untagged++
			mu.Unlock()
		}
		return nil, nil
	}
	opt.Pilot = pl
	rep := runJob(t, f.job, opt)
	if rep.Status != StatusFinished {
		t.Fatalf("status %s (%s)", rep.Status, rep.StopReason)
	}
	if p := rep.Problems; p.Done+p.Failed+p.LeftOut != int64(len(pl.ids)) {
		t.Errorf("the run resolved %d problems (done %d, failed %d, left out %d); the pilot holds %d", p.Done+p.Failed+p.LeftOut, p.Done, p.Failed, p.LeftOut, len(pl.ids))
	}
	if untagged != 0 {
		t.Errorf("%d requests went without the context Start gave their problem", untagged)
	}
	ended := map[string]bool{}
	for _, e := range pl.ends {
		if !pl.ids[e.ID] || ended[e.ID] || pl.started[e.ID] != 1 {
			t.Errorf("End(%s): in the sample %v, ended before %v, started %d times", e.ID, pl.ids[e.ID], ended[e.ID], pl.started[e.ID])
		}
		ended[e.ID] = true
		if e.Pending || (e.Record == nil) == (e.FailedStage == "") {
			t.Errorf("End(%s): pending %v, record %v, failed stage %q; want a finished run's problem to end as a record or at a stage", e.ID, e.Pending, e.Record != nil, e.FailedStage)
		}
		if e.Stages[job.StageRollout].Requests == 0 {
			t.Errorf("End(%s): stages %v; want the rollout requests counted", e.ID, e.Stages)
		}
	}
	if len(ended) != len(pl.ids) {
		t.Errorf("End heard %d problems, want the %d of the sample", len(ended), len(pl.ids))
	}
}
