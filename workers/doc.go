// Package workers reads the run directories of a partitioned job's workers
// as one job: distill merge joins them into one corpus (refusing workers of
// other jobs, inputs or partitions), and distill status over several
// directories shows their progress, cost and budget side by side. It sits
// above pipeline: it reads the report.json a run writes and writes the
// merged one.
package workers
