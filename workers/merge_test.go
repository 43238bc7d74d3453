package workers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/schema"
)

// runWorkers runs job as k partitioned workers into dir/part-I and
// returns their directories.
func runWorkers(t *testing.T, j job.Job, dir string, k int) []string {
	t.Helper()
	var dirs []string
	for i := range k {
		w := j
		w.Out = filepath.Join(dir, fmt.Sprintf("part-%d", i))
		w.Partition = fmt.Sprintf("%d/%d", i, k)
		if rep := runJob(t, w, pipeline.Options{}); rep.Status != pipeline.StatusFinished {
			t.Fatalf("worker %s: %s (%s)", w.Partition, rep.Status, rep.StopReason)
		}
		dirs = append(dirs, w.Out)
	}
	return dirs
}

// sameRecords compares two corpora by id: the same ids, and per id the
// same problem, rubric and rollouts (what a trainer reads).
func sameRecords(t *testing.T, got, want map[string]*schema.Record) {
	t.Helper()
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		t.Fatalf("merged ids differ from a whole run's: %d vs %d", len(g), len(w))
	}
	for id, w := range want {
		g := got[id]
		if g.Problem != w.Problem || g.Answer != w.Answer || g.Split != w.Split || !reflect.DeepEqual(g.Rubric, w.Rubric) || !reflect.DeepEqual(g.Rollouts, w.Rollouts) {
			t.Errorf("record %s differs from the whole run's", id)
		}
	}
}

// TestMergeIsWhatOneMachineMakes: three workers merged hold the records,
// failures and figures of one whole-input run, under its job: the merged
// directory is one that run resumes with nothing left to do.
func TestMergeIsWhatOneMachineMakes(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 30, sim.Config{KeepLog: true})
	whole := f.Job
	whole.Out = filepath.Join(f.Dir, "whole")
	wholeRep := runJob(t, whole, pipeline.Options{})
	dirs := runWorkers(t, f.Job, f.Dir, 3)

	out := filepath.Join(f.Dir, "all")
	rep, err := Merge(t.Context(), dirs, out, MergeOptions{ShardRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, runtest.ReadCorpus(t, out), runtest.ReadCorpus(t, whole.Out))
	if got, want := slices.Sorted(maps.Keys(runtest.ReadFailures(t, out))), slices.Sorted(maps.Keys(runtest.ReadFailures(t, whole.Out))); !slices.Equal(got, want) {
		t.Errorf("merged failures %v, a whole run's %v", got, want)
	}
	man, err := corpus.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if man.JobFingerprint != wholeRep.JobFingerprint || man.Mixed() {
		t.Errorf("merged manifest: job %s (mixed %v), a whole run's %s", man.JobFingerprint, man.Mixed(), wholeRep.JobFingerprint)
	}
	for _, s := range man.Shards {
		if s.Rows > 4 {
			t.Errorf("shard %s holds %d rows, more than --shard-rows 4", s.File, s.Rows)
		}
	}
	if v, err := corpus.Verify(out); err != nil || !v.OK() {
		t.Errorf("the merged corpus does not verify: %+v, %v", v, err)
	}
	wp, mp := wholeRep.Problems, rep.Problems
	if mp.DoneThisSession != wp.Done || mp.FailedThisSession+mp.LeftOutThisSession != wp.Failed+wp.LeftOut {
		t.Errorf("the merge says it copied %d records and %d failures, want %d and %d", mp.DoneThisSession, mp.FailedThisSession+mp.LeftOutThisSession, wp.Done, wp.Failed+wp.LeftOut)
	}
	if mp.Unique != wp.Unique || mp.Done != wp.Done || mp.Failed != wp.Failed || mp.LeftOut != wp.LeftOut || mp.InputRows != wp.InputRows || mp.Pending != 0 {
		t.Errorf("merged report problems %+v, a whole run's %+v", mp, wp)
	}
	if rep.Sampled != wholeRep.Sampled || rep.CorpusRows != wholeRep.CorpusRows || rep.Rollouts != wholeRep.Rollouts {
		t.Errorf("merged report rollouts %+v %+v, a whole run's %+v %+v", rep.Sampled, rep.Rollouts, wholeRep.Sampled, wholeRep.Rollouts)
	}
	if rep.Validity["overall"].Items != wholeRep.Validity["overall"].Items || rep.Validity["overall"].Rate != wholeRep.Validity["overall"].Rate {
		t.Errorf("merged validity %+v, a whole run's %+v", *rep.Validity["overall"], *wholeRep.Validity["overall"])
	}
	onDisk, _, err := pipeline.ReadReport(out)
	if err != nil || onDisk.Status != pipeline.StatusFinished {
		t.Errorf("merged report.json: %s, %v", onDisk.Status, err)
	}

	// The whole job resumes in the merged directory with nothing to send.
	again := whole
	again.Out = out
	from := len(f.Srv.Log())
	resumed := runJob(t, again, pipeline.Options{})
	if sent := len(f.Srv.Log()) - from; sent != 0 || resumed.Problems.AlreadyDone != wp.Done {
		t.Errorf("the whole job in the merged directory sent %d requests and found %d done, want 0 and %d", sent, resumed.Problems.AlreadyDone, wp.Done)
	}
}

// stopAfter is a context that ends after n calls of Err: a merge stopped
// at a chosen record.
type stopAfter struct {
	context.Context
	n atomic.Int64
}

func (c *stopAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestInterruptedMergeResumes: a merge stopped part way and run again
// finishes the same corpus, each record once, without duplicate failures.
func TestInterruptedMergeResumes(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 16, sim.Config{})
	dirs := runWorkers(t, f.Job, f.Dir, 4)
	full := filepath.Join(f.Dir, "full")
	if _, err := Merge(t.Context(), dirs, full, MergeOptions{ShardRows: 3}); err != nil {
		t.Fatal(err)
	}
	want := runtest.ReadCorpus(t, full)
	for _, stopAt := range []int64{1, 7, int64(len(want)) - 1} {
		out := filepath.Join(f.Dir, fmt.Sprintf("stopped-%d", stopAt))
		ctx := &stopAfter{Context: t.Context()}
		ctx.n.Store(stopAt)
		if _, err := Merge(ctx, dirs, out, MergeOptions{ShardRows: 3}); !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at %d: %v", stopAt, err)
		}
		if st, _, _ := pipeline.ReadReport(out); st.Status == pipeline.StatusFinished {
			t.Errorf("stopped at %d: report says finished", stopAt)
		}
		if _, err := Merge(t.Context(), dirs, out, MergeOptions{ShardRows: 3}); err != nil {
			t.Fatalf("rerun after a stop at %d: %v", stopAt, err)
		}
		sameRecords(t, runtest.ReadCorpus(t, out), want)
		b, _ := os.ReadFile(filepath.Join(out, "failures.jsonl"))
		if lines, fails := strings.Count(string(b), "\n"), len(runtest.ReadFailures(t, full)); lines != fails {
			t.Errorf("stopped at %d: failures.jsonl has %d lines for %d failures", stopAt, lines, fails)
		}
	}
}

// TestMergeRefuses: parts of different jobs, a missing, doubled or
// unfinished partition, a whole-input run, or an --out holding another
// corpus are refused with every reason named, and nothing is written.
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 12, sim.Config{})
	dirs := runWorkers(t, f.Job, f.Dir, 3)
	other := f.Job
	other.Rollout.N = 5
	otherDirs := runWorkers(t, other, filepath.Join(f.Dir, "other"), 3)
	whole := f.Job
	whole.Out = filepath.Join(f.Dir, "whole")
	runJob(t, whole, pipeline.Options{})

	stopped := filepath.Join(f.Dir, "stopped")
	copyDir(t, dirs[2], stopped)
	rep, _, _ := pipeline.ReadReport(stopped)
	rep.Status, rep.StopReason, rep.StoppedBy = pipeline.StatusStopped, "interrupted", pipeline.StopInterrupt
	if err := pipeline.WriteReport(fsys.OS, stopped, &rep); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		parts []string
		out   string
		says  []string
	}{
		{"another job", []string{dirs[0], otherDirs[1], dirs[2]}, "", []string{otherDirs[1] + " has another job than " + dirs[0] + ": rollout.n: 4 → 5"}},
		{"a missing partition", dirs[:2], "", []string{"missing partitions: 2/3"}},
		{"a partition twice", []string{dirs[0], dirs[1], dirs[1], dirs[2]}, "", []string{"partition 1/3 is in both"}},
		{"an unfinished worker", []string{dirs[0], dirs[1], stopped}, "", []string{stopped + " (partition 2/3) has not finished (stopped: interrupted)"}},
		{"a whole-input run", []string{whole.Out}, "", []string{whole.Out + " is not a partitioned worker"}},
		{"an out that is a part", dirs, dirs[0], []string{"is one of the run directories"}},
		{"an out holding another corpus", dirs, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, fresh := tc.out, tc.out == "" && tc.says != nil
			if out == "" {
				out = filepath.Join(t.TempDir(), "merged")
			}
			if tc.says == nil { // an out holding another job's records
				o := other
				o.Out = out
				runJob(t, o, pipeline.Options{})
				tc.says = []string{"holds", "records of another job"}
			}
			_, err := Merge(t.Context(), tc.parts, out, MergeOptions{})
			if err == nil {
				t.Fatal("merged")
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal does not say %q:\n%v", s, err)
				}
			}
			if fresh {
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("a refused merge created %s", out)
				}
			}
		})
	}
}

// copyDir copies the files of a run directory.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
