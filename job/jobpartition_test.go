package job

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
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

// partitionCounts counts the ids of n distinct problems per partition.
func partitionCounts(k, n int) []int {
	counts := make([]int, k)
	for i := range n {
		id := ProblemID(fmt.Sprintf("Problem %d: compute the sum of the first %d odd numbers.", i, i), fmt.Sprint(i*i))
		counts[PartitionOf(id, k)]++
	}
	return counts
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
	if err != nil || job.PartitionSpec() != (Partition{3, 4}) {
		t.Errorf("job file partition 3/4: %v, %v", job.PartitionSpec(), err)
	}
}
