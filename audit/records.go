package audit

import (
	"context"
	"fmt"
	"slices"

	"github.com/rubricforge/rubricforge/schema"
)

// Records streams every record of in to fn, file by file in the order of
// in.Files and row by row, as full schema.Records (rollout texts
// included), for the commands that make a new corpus from one (`distill
// refine`). A verl export's rows hold only the label, so its records have
// no rollouts, no provenance but the spec version and no usage. A row that
// does not decode goes to bad and is skipped; a file that cannot be read,
// an error of fn, or ctx ending stop the stream with that error. fn may
// keep rec.
func Records(ctx context.Context, in *Input, fn func(rec *schema.Record) error, bad func(Problem)) error {
	for _, f := range in.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := scanFile(f, in.Format, recordOfLabel, func(rec *schema.Record, _ int64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fn(rec)
		}, bad)
		if err != nil {
			return fmt.Errorf("reading %s: %w", f.Path, err)
		}
	}
	return nil
}

// recordOfLabel is what a verl export's label holds of a record.
func recordOfLabel(l *schema.Label, split string) schema.Record {
	rec := schema.Record{ID: l.ID, Source: l.DataSource, Split: split, Problem: l.Question, Answer: l.GroundTruth,
		Style: l.Style, Rubric: slices.Clone(l.Rubric), Rollouts: []schema.Rollout{}}
	rec.Provenance.SpecVersion = l.V
	return rec
}
