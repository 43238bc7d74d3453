package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
)

// TestPartitionedWorkersSplitTheInput: K workers over one input hold
// disjoint shares that together are a whole-input run's records; each
// report counts the other partitions' rows neither as duplicates nor as
// bad lines, and says which share the worker holds.
func TestPartitionedWorkersSplitTheInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20, sim.Config{})
	rows := f.rows
	dup := rows[5] // a duplicate inside some partition
	runtest.WriteJSONL(t, f.input, append(slices.Clone(rows), dup), "{not json")

	whole := f.job
	whole.Out = filepath.Join(f.dir, "whole")
	wholeRep := runJob(t, whole, Options{HTTPClient: runtest.InProcess})
	want := runtest.ReadCorpus(t, whole.Out)

	const k = 3
	got := map[string]int{}
	var unique, dups int64
	for i := range k {
		jb := f.job
		jb.Out = filepath.Join(f.dir, fmt.Sprintf("part-%d", i))
		jb.Partition = fmt.Sprintf("%d/%d", i, k)
		rep := runJob(t, jb, Options{HTTPClient: runtest.InProcess})
		if rep.Status != StatusFinished {
			t.Fatalf("worker %d: %s (%s)", i, rep.Status, rep.StopReason)
		}
		if rep.Problems.BadLines != 1 {
			t.Errorf("worker %d counts %d bad lines, want the 1 of the input", i, rep.Problems.BadLines)
		}
		s := rep.Partition
		if s == nil || s.Partition != jb.Partition || s.RowsSeen != int64(len(rows)+1) || s.RowsInPartition != rep.Problems.Unique+rep.Problems.Duplicates {
			t.Errorf("worker %d: partition share %+v, problems %+v", i, s, rep.Problems)
		}
		unique += rep.Problems.Unique
		dups += rep.Problems.Duplicates
		for id := range runtest.ReadCorpus(t, jb.Out) {
			got[id]++
			if job.PartitionOf(id, k) != i {
				t.Errorf("worker %d holds %s of partition %d", i, id, job.PartitionOf(id, k))
			}
		}
	}
	if unique != wholeRep.Problems.Unique || dups != 1 {
		t.Errorf("the workers count %d unique and %d duplicates; the whole run %d and 1", unique, dups, wholeRep.Problems.Unique)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Errorf("the workers' ids differ from the whole run's: %d vs %d", len(got), len(want))
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("id %s is in %d workers' corpora", id, n)
		}
	}
}

// TestWorkerRefusesAnotherPartitionsDirectory: the partition is part of the
// job's identity, so a worker pointed at another partition's directory (or
// a whole-input run at a worker's) is refused with the changed setting.
func TestWorkerRefusesAnotherPartitionsDirectory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, sim.Config{})
	job := f.job
	job.Partition = "1/4"
	runJob(t, job, Options{HTTPClient: runtest.InProcess})
	for _, other := range []struct{ partition, says string }{
		{"2/4", "partition: 1/4 → 2/4"},
		{"", "partition: 1/4 → all"},
	} {
		j := f.job
		j.Partition = other.partition
		_, err := Run(t.Context(), j, Options{HTTPClient: runtest.InProcess})
		if !errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), other.says) {
			t.Errorf("partition %q on a 1/4 directory: got %v, want a refusal saying %q", other.partition, err, other.says)
		}
	}
	// The same partition resumes.
	if _, err := Run(t.Context(), job, Options{HTTPClient: runtest.InProcess}); err != nil {
		t.Errorf("resuming partition 1/4: %v", err)
	}
}

// TestPartitionedProgress: a running worker's progress counts the other
// partitions' rows it has read as handled, and its ETA counts only its own
// share of the rows still to read.
func TestPartitionedProgress(t *testing.T) {
	t.Parallel()
	r := &Report{Status: StatusRunning, Updated: time.Now(),
		Problems:  ProblemCounts{InputLines: 1000, InputRows: 400, Unique: 100, Done: 60, Pending: 40},
		Partition: &PartitionShare{Partition: "0/4", RowsSeen: 400, RowsInPartition: 100}}
	var b strings.Builder
	r.writeProgress(&b)
	if !strings.Contains(b.String(), "progress: 360 of 1000 input rows (36.0%)") {
		t.Errorf("progress line %q: want the 300 rows of other partitions counted as handled", b.String())
	}
	f := partitionFilter{part: job.Partition{Index: 0, Count: 4}}
	for range 100 {
		f.inPart.Add(1)
	}
	if got := f.ofRows(1000, 400); got != 250 {
		t.Errorf("the share of 1000 rows after 100 of 400 read is %d, want 250", got)
	}
	if got := (&partitionFilter{part: job.Partition{Index: 1, Count: 4}}).ofRows(1000, 0); got != 250 {
		t.Errorf("before any row is read the share of 1000 rows is %d, want 1000/4", got)
	}
	if got := (&partitionFilter{}).ofRows(1000, 400); got != 1000 {
		t.Errorf("a whole-input run's share of 1000 rows is %d", got)
	}
}
