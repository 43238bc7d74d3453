// Package reviewexport exports a corpus with people's review applied, as
// `distill export --review` does, for the tests on both sides of a review:
// the browser test (cmd/validate) and rewardd's reviewed-export test. It is
// apart from reviewtest because the review package's own tests use that.
package reviewexport

import (
	"context"
	"fmt"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/review"
)

// Verl exports run to out as verl with the reviewers' logs
// applied (policy latest), as `distill export --review LOG...` does, and
// returns the export's manifest.
func Verl(ctx context.Context, run, out string, reviewers ...string) (*corpus.ExportManifest, error) {
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
