package pipeline

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/schema"
)

// MaxPartitions bounds K in a partition I/K.
const MaxPartitions = 1 << 16

// partitionAll is the partition setting of a job that takes the whole
// input. It is left out of the fingerprint, so a job without a partition
// keeps the fingerprint it had before partitions existed.
const partitionAll = "all"

// Partition is one worker's share of the input when a job is split over K
// workers without a coordinator: a problem belongs to partition
// xxhash64(key) mod K, its key being its id, or for a passage of the
// grounded style its content hash (partitionKey), so identical passages
// under two ids go to one worker, which keeps the first as one machine does. The rule is deterministic, so a restarted worker
// redoes only its own share, and the shares are disjoint and cover the
// input. The zero Partition holds every problem.
type Partition struct {
	Index, Count int
}

// ParsePartition reads "I/K" (0 <= I < K <= MaxPartitions).
func ParsePartition(s string) (Partition, error) {
	is, ks, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, ierr := strconv.Atoi(strings.TrimSpace(is))
	k, kerr := strconv.Atoi(strings.TrimSpace(ks))
	switch {
	case !ok || ierr != nil || kerr != nil:
		return Partition{}, fmt.Errorf("%q is not I/K (this worker's index I of K partitions, e.g. 3/16)", s)
	case k < 1 || k > MaxPartitions:
		return Partition{}, fmt.Errorf("%q: K=%d is outside 1..%d", s, k, MaxPartitions)
	case i < 0 || i >= k:
		return Partition{}, fmt.Errorf("%q: I=%d is outside 0..%d (partitions are numbered from 0)", s, i, k-1)
	}
	return Partition{Index: i, Count: k}, nil
}

// String is "I/K", or "all" for the zero Partition.
func (p Partition) String() string {
	if p.Count == 0 {
		return partitionAll
	}
	return fmt.Sprintf("%d/%d", p.Index, p.Count)
}

// Holds reports whether problem id belongs to p.
func (p Partition) Holds(id string) bool {
	return p.Count <= 1 || PartitionOf(id, p.Count) == p.Index
}

// PartitionOf is the partition of problem id among k: xxhash64(id) mod k.
func PartitionOf(id string, k int) int {
	return int(xxhash.Sum64String(id) % uint64(k))
}

// partitionKey is what decides a unit's partition: a passage's content
// hash, else the problem's id.
func partitionKey(p *Problem) string {
	if p.DocHash != "" {
		return p.DocHash
	}
	return p.ID
}

// recordPartitionKey is partitionKey of the unit a record was made from.
func recordPartitionKey(r *schema.Record) string {
	if r.Grounded != nil && r.Grounded.DocHash != "" {
		return r.Grounded.DocHash
	}
	return r.ID
}

// partition is the job's partition; the zero Partition when it has none
// (Validate has refused a bad one).
func (j *Job) partition() Partition {
	if j.Partition == "" {
		return Partition{}
	}
	p, _ := ParsePartition(j.Partition)
	return p
}

// partitionSetting is the partition as the job's identity shows it. A
// grounded worker's says its share is by passage content: workers that
// split passages by id (before this rule) hold other shares, so they are
// not resumed or merged with these.
func (j *Job) partitionSetting() string {
	if _, err := ParsePartition(j.Partition); j.Partition != "" && err != nil {
		return j.Partition // shown as given; Validate refuses it
	}
	if p := j.partition(); p.Count > 0 && j.Style == schema.StyleGrounded {
		return p.String() + " by passage content"
	}
	return j.partition().String()
}

func (j *Job) validatePartition(v *validation) {
	if j.Partition == "" {
		return
	}
	if _, err := ParsePartition(j.Partition); err != nil {
		v.bad("partition", "%v", err)
	}
}

// PartitionShare is what a partitioned worker's report says of its share
// of the input: every row it read, and those in its partition (the others
// are neither duplicates nor bad lines: another worker takes them).
type PartitionShare struct {
	Partition       string `json:"partition"` // I/K
	RowsSeen        int64  `json:"rows_seen"`
	RowsInPartition int64  `json:"rows_in_partition"`
}

// outside is the number of rows read that belong to other partitions; 0
// for a nil share.
func (s *PartitionShare) outside() int64 {
	if s == nil {
		return 0
	}
	return s.RowsSeen - s.RowsInPartition
}

// partitionFilter is the feeder's partition check and its count.
type partitionFilter struct {
	part   Partition
	inPart atomic.Int64
	// sample, when set, narrows the partition to the problems of a
	// distill plan's pilot (see Sample).
	sample *Sample
}

// admit reports whether the feeder takes the problem p, counting it.
func (f *partitionFilter) admit(p *Problem) bool {
	if !f.part.Holds(partitionKey(p)) || !f.sample.Holds(p.ID) {
		return false
	}
	f.inPart.Add(1)
	return true
}

// share is the report's account of the partition after rowsSeen rows; nil
// for a job without one.
func (f *partitionFilter) share(rowsSeen int64) *PartitionShare {
	if f.part.Count == 0 {
		return nil
	}
	return &PartitionShare{Partition: f.part.String(), RowsSeen: rowsSeen, RowsInPartition: f.inPart.Load()}
}

// ofRows scales a count of input rows to this partition's expected share
// of them, for the ETA before the input is read to its end: the share seen
// so far, or 1/K before any row is read.
func (f *partitionFilter) ofRows(rows, seen int64) int64 {
	if f.sample != nil { // a plan's pilot: its sample, known up front
		return min(rows, int64(f.sample.Len()))
	}
	if f.part.Count <= 1 {
		return rows
	}
	if seen > 0 {
		return rows * f.inPart.Load() / seen
	}
	return rows / int64(f.part.Count)
}

// writeShare prints which share of the input a partitioned worker holds;
// nothing for a nil share.
func (s *PartitionShare) writeShare(w io.Writer) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "  partition %s: %d of the %d input rows read (%.1f%%) are this worker's; the others are other partitions'\n",
		s.Partition, s.RowsInPartition, s.RowsSeen, pct(s.RowsInPartition, s.RowsSeen))
}
