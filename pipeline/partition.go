package pipeline

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"
)

// PartitionKey is what decides a unit's partition: a passage's content
// hash, else the problem's id.
func PartitionKey(p *source.Problem) string {
	if p.DocHash != "" {
		return p.DocHash
	}
	return p.ID
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
	part   job.Partition
	inPart atomic.Int64
	// sample, when set, narrows the partition to the problems of a
	// distill plan's pilot (see Pilot).
	sample Pilot
}

// admit reports whether the feeder takes the problem p, counting it.
func (f *partitionFilter) admit(p *source.Problem) bool {
	if !f.part.Holds(PartitionKey(p)) || (f.sample != nil && !f.sample.Holds(p.ID)) {
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
