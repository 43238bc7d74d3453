package pipeline

import (
	"context"
	"testing"
)

// TestCountersAfterKillsAreRecomputed: a run SIGKILLed several times and
// resumed reports the same sampled rollouts as the same job run without a
// kill (not the rollouts of problems report.json counted before their
// records were durable, counted again when they were redone), and never
// fewer requests sent than the answers its cache holds.
func TestCountersAfterKillsAreRecomputed(t *testing.T) {
	t.Parallel()
	srv, job, jobFile, _ := killableJob(t, 16, nil)
	kills := 0
	for _, after := range []int64{60, 130, 200} {
		from := int64(len(srv.Log()))
		if runChildUntil(t, jobFile, func() bool { return srv.Count() >= from+after }) {
			kills++
		}
		waitFor(t, "the endpoint to finish the killed client's requests", func() bool { return int64(len(srv.Log())) == srv.Count() })
	}
	if kills == 0 {
		t.Fatal("no run was killed")
	}
	rep, err := Run(context.Background(), job, Options{})
	if err != nil {
		t.Fatal(err)
	}
	clean := job
	clean.Out = job.Out + "-uninterrupted"
	want := runBuilt(t, clean)
	if rep.Sampled != want.Sampled {
		t.Errorf("after %d kills: sampled rollouts %+v; the same job uninterrupted: %+v", kills, rep.Sampled, want.Sampled)
	}
	if max := 8 * (rep.Problems.Done + rep.Problems.LeftOut + rep.Problems.Failed); rep.Sampled.Total > max {
		t.Errorf("%d rollouts sampled for %d problems of n=8 (at most %d)", rep.Sampled.Total, rep.Problems.Unique, max)
	}
	if answers := int64(cacheLen(t, job.Out)); rep.LLM.Total.Requests < answers {
		t.Errorf("%d requests sent while the cache holds %d answers", rep.LLM.Total.Requests, answers)
	}
}
