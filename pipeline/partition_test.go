package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/internal/llmtest"
)

func TestParsePartition(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Partition
		wantErr string
	}{
		{"0/16", Partition{0, 16}, ""},
		{"15/16", Partition{15, 16}, ""},
		{" 3 / 4 ", Partition{3, 4}, ""},
		{"0/1", Partition{0, 1}, ""},
		{"16/16", Partition{}, "I=16 is outside 0..15"},
		{"-1/4", Partition{}, "I=-1 is outside 0..3"},
		{"0/0", Partition{}, "K=0 is outside"},
		{"a/b", Partition{}, "is not I/K"},
		{"3", Partition{}, "is not I/K"},
		{"1/2/3", Partition{}, "is not I/K"},
		{"0/70000", Partition{}, "K=70000 is outside"},
	} {
		got, err := ParsePartition(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePartition(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParsePartition(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestPartitionsAreDisjointAndCover: every id is in exactly one of the K
// partitions, the one PartitionOf names.
func TestPartitionsAreDisjointAndCover(t *testing.T) {
	const k = 7
	for i := range 5000 {
		id := fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
		n := 0
		for p := range k {
			if (Partition{p, k}).Holds(id) {
				n++
				if p != PartitionOf(id, k) {
					t.Fatalf("id %s is held by %d, PartitionOf says %d", id, p, PartitionOf(id, k))
				}
			}
		}
		if n != 1 {
			t.Fatalf("id %s is in %d partitions of %d", id, n, k)
		}
	}
	if !(Partition{}).Holds("anything") {
		t.Error("the zero partition does not hold every id")
	}
}

// TestPartitionBalance: 64 partitions over 1,000,000 problem ids are as
// even as a uniform hash makes them. No coordinator-free rule does better
// on ids that are themselves hashes: each count is binomial, sigma =
// sqrt(n(K-1))/K, 0.79% of the mean here, so the largest of 64 deviations
// is about 2.4 sigma (~1.9%; BenchmarkPartitionBalance measures it). The
// test asserts a chi-square statistic a uniform hash stays under (63
// degrees of freedom, mean 63, sd 11.2: 5 sd) and no partition 4.5 sigma
// (3.6%) off, over the ids the pipeline computes and over sequential ids
// an input supplies (input.fields.id); a rule that used only some digits
// of the id fails.
func TestPartitionBalance(t *testing.T) {
	const k, n = 64, 1_000_000
	var b [8]byte
	for _, ids := range []struct {
		name string
		id   func(i int) string
	}{
		{"computed ids", func(i int) string { // 16 hex digits of an xxhash64, as ProblemID makes them
			binary.LittleEndian.PutUint64(b[:], uint64(i))
			return fmt.Sprintf("%016x", xxhash.Sum64(b[:]))
		}},
		{"input ids", func(i int) string { return fmt.Sprintf("dapo-%07d", i) }}, // input.fields.id: sequential, alike in all but a few digits
	} {
		counts := make([]int, k)
		for i := range n {
			counts[PartitionOf(ids.id(i), k)]++
		}
		mean := float64(n) / k
		sigma := math.Sqrt(float64(n)*(k-1)) / k
		chi2 := 0.0
		for p, c := range counts {
			d := float64(c) - mean
			chi2 += d * d / mean
			if math.Abs(d) > 4.5*sigma {
				t.Errorf("%s: partition %d/%d holds %d ids, %.2f%% off the mean %.0f", ids.name, p, k, c, 100*d/mean, mean)
			}
		}
		if limit := 63 + 5*math.Sqrt(2*63); chi2 > limit {
			t.Errorf("%s: chi-square over the %d partitions is %.1f, more than a uniform hash reaches (%.1f)", ids.name, k, chi2, limit)
		}
	}
}

// partitionCounts counts the ids of n distinct problems per partition.
func partitionCounts(k, n int) []int {
	counts := make([]int, k)
	for i := range n {
		id := ProblemID(fmt.Sprintf("Problem %d: compute the sum of the first %d odd numbers.", i, i), fmt.Sprint(i*i))
		counts[PartitionOf(id, k)]++
	}
	return counts
}

// BenchmarkPartitionBalance reports the largest deviation from the mean of
// 64 partitions over the ids of 1,000,000 distinct problems.
func BenchmarkPartitionBalance(b *testing.B) {
	const k, n = 64, 1_000_000
	var worst, over float64
	for b.Loop() {
		counts := partitionCounts(k, n)
		worst, over = 0, 0
		for _, c := range counts {
			dev := (float64(c) - float64(n)/k) / (float64(n) / k)
			worst, over = max(worst, dev, -dev), max(over, dev)
		}
	}
	b.ReportMetric(100*worst, "max-dev-%")
	b.ReportMetric(100*over, "largest-over-mean-%")
}

// TestBadPartitionIsAUsageError: a bad --partition or job file value is a
// usage error naming the field, found before anything runs.
func TestBadPartitionIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"0/0", "16/16", "-1/4", "a/b"} {
		_, err := PrepareJob("", func(j *Job) {
			*j = testJob(filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "run"), "http://127.0.0.1:1/v1")
			j.Partition = bad
		})
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "partition: ") {
			t.Errorf("partition %q: got %v, want a usage error naming partition", bad, err)
		}
	}
	path := filepath.Join(dir, "job.yaml")
	os.WriteFile(path, []byte("input: {paths: [in.jsonl]}\nout: run\nrollout: {base_url: 'http://127.0.0.1:1/v1', model: m}\npartition: 4/4\n"), 0o644)
	_, err := PrepareJob(path, nil)
	if err == nil || !strings.Contains(err.Error(), "partition: ") {
		t.Errorf("job file partition 4/4: got %v", err)
	}
	os.WriteFile(path, []byte("input: {paths: [in.jsonl]}\nout: run\nrollout: {base_url: 'http://127.0.0.1:1/v1', model: m}\npartition: 3/4\n"), 0o644)
	job, err := PrepareJob(path, nil)
	if err != nil || job.partition() != (Partition{3, 4}) {
		t.Errorf("job file partition 3/4: %v, %v", job.partition(), err)
	}
}

// TestPartitionedWorkersSplitTheInput: K workers over one input hold
// disjoint shares that together are a whole-input run's records; each
// report counts the other partitions' rows neither as duplicates nor as
// bad lines, and says which share the worker holds.
func TestPartitionedWorkersSplitTheInput(t *testing.T) {
	f := newFixture(t, 40, llmtest.Config{})
	rows := f.rows
	dup := rows[5] // a duplicate inside some partition
	writeJSONL(t, f.input, append(slices.Clone(rows), dup), "{not json")

	whole := f.job
	whole.Out = filepath.Join(f.dir, "whole")
	wholeRep := runJob(t, whole, Options{})
	want := readCorpus(t, whole.Out)

	const k = 3
	got := map[string]int{}
	var unique, dups int64
	for i := range k {
		job := f.job
		job.Out = filepath.Join(f.dir, fmt.Sprintf("part-%d", i))
		job.Partition = fmt.Sprintf("%d/%d", i, k)
		rep := runJob(t, job, Options{})
		if rep.Status != StatusFinished {
			t.Fatalf("worker %d: %s (%s)", i, rep.Status, rep.StopReason)
		}
		if rep.Problems.BadLines != 1 {
			t.Errorf("worker %d counts %d bad lines, want the 1 of the input", i, rep.Problems.BadLines)
		}
		s := rep.Partition
		if s == nil || s.Partition != job.Partition || s.RowsSeen != 41 || s.RowsInPartition != rep.Problems.Unique+rep.Problems.Duplicates {
			t.Errorf("worker %d: partition share %+v, problems %+v", i, s, rep.Problems)
		}
		unique += rep.Problems.Unique
		dups += rep.Problems.Duplicates
		for id := range readCorpus(t, job.Out) {
			got[id]++
			if PartitionOf(id, k) != i {
				t.Errorf("worker %d holds %s of partition %d", i, id, PartitionOf(id, k))
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
	f := newFixture(t, 12, llmtest.Config{})
	job := f.job
	job.Partition = "1/4"
	runJob(t, job, Options{})
	for _, other := range []struct{ partition, says string }{
		{"2/4", "partition: 1/4 → 2/4"},
		{"", "partition: 1/4 → all"},
	} {
		j := f.job
		j.Partition = other.partition
		_, err := Run(t.Context(), j, Options{})
		if !errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), other.says) {
			t.Errorf("partition %q on a 1/4 directory: got %v, want a refusal saying %q", other.partition, err, other.says)
		}
	}
	// The same partition resumes.
	if _, err := Run(t.Context(), job, Options{}); err != nil {
		t.Errorf("resuming partition 1/4: %v", err)
	}
}

// TestWholeInputFingerprintIsUnchanged: a job without a partition keeps the
// fingerprint it had before partitions existed, so run directories made
// before resume without --force.
func TestWholeInputFingerprintIsUnchanged(t *testing.T) {
	j := fullJob(t)
	var b strings.Builder
	for _, l := range j.identityLines() {
		if l.key != "partition" {
			fmt.Fprintf(&b, "%s=%s\n", l.key, l.value)
		}
	}
	old := fullJob(t)
	old.Partition = ""
	before := fmt.Sprintf("%016x", xxhash.Sum64String(b.String()))
	if got := old.Fingerprint(); got != before {
		t.Errorf("a whole-input job's fingerprint is %s, before partitions %s", got, before)
	}
	j.Partition = "0/1"
	if j.Fingerprint() == old.Fingerprint() {
		t.Error("partition 0/1 has the whole-input fingerprint")
	}
}

// TestPartitionedProgress: a running worker's progress counts the other
// partitions' rows it has read as handled, and its ETA counts only its own
// share of the rows still to read.
func TestPartitionedProgress(t *testing.T) {
	r := &Report{Status: StatusRunning, Updated: time.Now(),
		Problems:  ProblemCounts{InputLines: 1000, InputRows: 400, Unique: 100, Done: 60, Pending: 40},
		Partition: &PartitionShare{Partition: "0/4", RowsSeen: 400, RowsInPartition: 100}}
	var b strings.Builder
	r.writeProgress(&b)
	if !strings.Contains(b.String(), "progress: 360 of 1000 input rows (36.0%)") {
		t.Errorf("progress line %q: want the 300 rows of other partitions counted as handled", b.String())
	}
	f := partitionFilter{part: Partition{0, 4}}
	for range 100 {
		f.inPart.Add(1)
	}
	if got := f.ofRows(1000, 400); got != 250 {
		t.Errorf("the share of 1000 rows after 100 of 400 read is %d, want 250", got)
	}
	if got := (&partitionFilter{part: Partition{1, 4}}).ofRows(1000, 0); got != 250 {
		t.Errorf("before any row is read the share of 1000 rows is %d, want 1000/4", got)
	}
	if got := (&partitionFilter{}).ofRows(1000, 400); got != 1000 {
		t.Errorf("a whole-input run's share of 1000 rows is %d", got)
	}
}
