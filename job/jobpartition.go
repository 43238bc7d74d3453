package job

import (
	"fmt"
	"strconv"
	"strings"

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

// PartitionSpec is the job's partition parsed; the zero Partition when it has none
// (Validate has refused a bad one).
func (j *Job) PartitionSpec() Partition {
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
	if p := j.PartitionSpec(); p.Count > 0 && j.Style == schema.StyleGrounded {
		return p.String() + " by passage content"
	}
	return j.PartitionSpec().String()
}

func (j *Job) validatePartition(v *validation) {
	if j.Partition == "" {
		return
	}
	if _, err := ParsePartition(j.Partition); err != nil {
		v.bad("partition", "%v", err)
	}
}
