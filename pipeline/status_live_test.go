package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestStatusDuringARunIsOnePicture: while requests are held at the
// endpoint and no checkpoint is due, distill status shows the requests in
// flight as they are (before: the report of the run's first second, "in
// flight 0/8"), and its problem counts and progress line agree on the
// input's total (before: "2 unique of 2 input rows" next to "0 of 30 input
// rows").
func TestStatusDuringARunIsOnePicture(t *testing.T) {
	t.Parallel()
	f, tap, opt := inProcessFixture(t, 30, sim.Config{})
	job := f.job
	job.Output.CheckpointInterval = time.Hour
	job.Limits.Concurrency = 8
	job.Limits.AttemptTimeout = time.Hour // held requests must not time out and lower the cap, however slow the machine
	opt.StatusEvery = 20 * time.Millisecond
	release := make(chan struct{})
	var held atomic.Int64
	tap.handle = func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
		held.Add(1)
		defer held.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		return nil, nil
	}
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { _, runErr = Run(context.Background(), job, opt) })
	defer func() {
		close(release)
		wg.Wait()
		if runErr != nil {
			t.Errorf("run: %v", runErr)
		}
	}()

	var st *Status
	waitFor(t, "status to show the 8 requests in flight", func() bool {
		var err error
		st, err = ReadStatus(job.Out)
		return err == nil && st.Report != nil && len(st.Report.Endpoints) == 1 &&
			st.Report.Endpoints[0].Health.InFlight == 8 && held.Load() == 8 && st.Report.Problems.InputLines == 30
	})
	var text bytes.Buffer
	st.WriteText(&text)
	out := text.String()
	for _, want := range []string{"of 30 input rows read so far", "of 30 input rows (", "in flight 8/8", "running for"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "this session took") {
		t.Errorf("a running run's status says how long the session took:\n%s", out)
	}
}

// TestStatusAfterKillSaysWhatItKnows: after kill -9 the status says how
// many records are committed, how many the last report counted as done
// beyond them (made again by the next run from the cache), and when the
// report was last written.
func TestStatusAfterKillSaysWhatItKnows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8, sim.Config{})
	rep := runJob(t, f.job, Options{HTTPClient: runtest.InProcess})
	rep.Status = StatusRunning // as a killed run leaves it...
	rep.Problems.Done += 3     // ...with 3 finished records not yet in a shard
	if err := WriteReport(fsys.OS, f.job.Out, rep); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(f.job.Out)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	st.WriteText(&text)
	out := text.String()
	for _, want := range []string{
		fmt.Sprintf("%d records are committed in shards", st.Manifest.Rows),
		"3 more were finished by its last update but not committed",
		"response cache",
		"the session ran for at least",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status after a kill lacks %q:\n%s", want, out)
		}
	}
}
