package reviewtest

import (
	"context"
	"fmt"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/review"
)

// ExportReviewed exports run to out as verl with the reviewers' logs
// applied (policy latest), as `distill export --review LOG...` does, and
// returns the export's manifest.
func ExportReviewed(ctx context.Context, run, out string, reviewers ...string) (*corpus.ExportManifest, error) {
	in, err := audit.Open(run)
	if err != nil {
		return nil, err
	}
	fp, err := review.Fingerprint(ctx, in)
	if err != nil {
		return nil, err
	}
	var logs []string
	for _, r := range reviewers {
		logs = append(logs, review.LogPath(run, r))
	}
	d, err := review.ReadDecisions(logs, fp)
	if err != nil {
		return nil, err
	}
	applier, err := review.NewApplier(d, review.Policy{})
	if err != nil {
		return nil, err
	}
	m, err := corpus.Export(ctx, run, corpus.ExportOptions{Format: corpus.FormatVerl, Out: out, Review: applier})
	if err != nil {
		return nil, fmt.Errorf("exporting %s with the review: %w", run, err)
	}
	return m, nil
}
