package audit

import (
	"context"
	"fmt"
	"slices"

	"github.com/rubricforge/rubricforge/schema"
)

// ScanRecords streams every record of in to fn, whole (rollouts, judge
// reasons and the grounded payload included), in file order: for a reader
// that shows records to people, such as `validate review`. A line or row
// that does not decode, and a file that cannot be read, are passed to bad
// and the rest is read; fn's error, or ctx's, ends the scan.
func ScanRecords(ctx context.Context, in *Input, fn func(*schema.Record) error, bad func(Problem)) error {
	return streamRecords(ctx, in, fn, bad, true)
}

// Records streams every record of in to fn like ScanRecords, for the
// commands that make a new corpus from one (`distill refine`): there a file
// that cannot be read stops the stream with that error, since a corpus made
// without it would look whole. A row that does not decode goes to bad and is
// skipped. fn may keep rec.
func Records(ctx context.Context, in *Input, fn func(rec *schema.Record) error, bad func(Problem)) error {
	return streamRecords(ctx, in, fn, bad, false)
}

// streamRecords is ScanRecords (pastUnreadable) and Records. A verl
// export's rows become records that hold what their label holds
// (recordOfLabel).
func streamRecords(ctx context.Context, in *Input, fn func(*schema.Record) error, bad func(Problem), pastUnreadable bool) error {
	for _, f := range in.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := scanFile(f, in.Format, recordOfLabel, func(r *schema.Record, _ int64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fn(r)
		}, bad)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case pastUnreadable:
			bad(Problem{File: f.Path, Error: err.Error()})
		default:
			return fmt.Errorf("reading %s: %w", f.Path, err)
		}
	}
	return nil
}

// recordOfLabel is what a verl export's label holds of a record: id,
// source, split, style, problem, answer, rubric and spec version; no
// rollouts, no other provenance, no usage.
func recordOfLabel(l *schema.Label, split string) schema.Record {
	rec := schema.Record{ID: l.ID, Source: l.DataSource, Split: split, Problem: l.Question, Answer: l.GroundTruth,
		Style: l.Style, Rubric: slices.Clone(l.Rubric), Rollouts: []schema.Rollout{}}
	rec.Provenance.SpecVersion = l.V
	return rec
}
