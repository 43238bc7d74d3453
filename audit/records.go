package audit

import (
	"context"

	"github.com/rubricforge/rubricforge/schema"
)

// ScanRecords streams every record of in to fn, whole (rollouts, judge
// reasons and the grounded payload included), in file order: for a reader
// that shows records to people, such as `validate review`. A verl export's
// rows become records that hold what their label holds (id, source, style,
// problem, answer, rubric, split). A line or row that does not decode, and
// a file that cannot be read, are passed to bad and the rest is read; fn's
// error, or ctx's, ends the scan.
func ScanRecords(ctx context.Context, in *Input, fn func(*schema.Record) error, bad func(Problem)) error {
	for _, f := range in.Files {
		_, err := scanFile(f, in.Format, recordOfLabel, func(r *schema.Record, _ int64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fn(r)
		}, bad)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			bad(Problem{File: f.Path, Error: err.Error()})
		}
	}
	return nil
}

// recordOfLabel is the record a verl label stands for.
func recordOfLabel(l *schema.Label, split string) schema.Record {
	return schema.Record{ID: l.ID, Source: l.DataSource, Split: split, Style: l.Style, Problem: l.Question,
		Answer: l.GroundTruth, Rubric: l.Rubric, Rollouts: []schema.Rollout{}}
}
