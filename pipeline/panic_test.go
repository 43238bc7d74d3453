package pipeline

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestPanicInAStageFailsOneProblem: a panic in the answer verifier, which
// runs in the stage fan-out's goroutines (one per rollout request), fails
// that problem, logs the stack, and the run goes on.
func TestPanicInAStageFailsOneProblem(t *testing.T) {
	t.Parallel()
	for _, n := range []int{4, 1} { // 4: in fan-out goroutines; 1: in the problem's own goroutine
		f, _, opt := inProcessFixture(t, 12, sim.Config{})
		jb := f.job
		jb.Rollout.N = n
		jb.Selection = job.Selection{}
		var calls atomic.Int64
		opt.hooks = &hooks{extract: func(text, finishReason string) (string, bool) {
			if calls.Add(1) == 3 {
				panic("verifier bug (injected by the test)")
			}
			return defaultExtract(text, finishReason)
		}}
		var logs runtest.SyncBuffer
		opt.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		rep, err := Run(context.Background(), jb, opt)
		if err != nil {
			t.Fatalf("n=%d: the run failed: %v", n, err)
		}
		checkAccounted(t, jb.Out, f.rows, rep)
		fails := runtest.ReadFailures(t, jb.Out)
		internal := 0
		for _, fl := range fails {
			if fl.Stage == job.StageInternal {
				internal++
				if !strings.Contains(fl.Reason, "verifier bug") || !strings.Contains(fl.Reason, "rollout stage") {
					t.Errorf("n=%d: failure reason %q does not name the panic and its stage", n, fl.Reason)
				}
			}
		}
		if internal != 1 || rep.FailuresByStage[job.StageInternal] != 1 {
			t.Errorf("n=%d: %d internal failures (report %v), want 1", n, internal, rep.FailuresByStage)
		}
		if l := logs.String(); !strings.Contains(l, "verifier bug") || !strings.Contains(l, "goroutine") || !strings.Contains(l, "verifyRollout") {
			t.Errorf("n=%d: the log lacks the panic's stack:\n%s", n, l)
		}
	}
}
