package refine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/plan"
)

// ErrNothingToDecompose is returned by Plan when no refined record of the
// source has a saturated item: the decomposition would send nothing.
var ErrNothingToDecompose = errors.New("no refined record has a saturated item: --decompose would send nothing")

// Plan is --decompose --plan: it decides the records and writes the
// decomposition's units and seeds exactly as Run does, then runs
// distill plan's pilot (plan.Run) on the decomposition's job with the same
// pipeline options, so the pilot is a sample of real decompositions in the
// work directory and cache the real refine uses: it pays nothing again for
// the sampled records. The plan is written to plan.json of the
// decomposition's run directory (batch pricing and distill status read it
// there) and returned with that directory. Out is not written.
func Plan(ctx context.Context, cfg Config, po plan.Options) (*corpus.PlanDoc, string, error) {
	if cfg.Decompose == nil {
		return nil, "", fmt.Errorf("--plan projects --decompose's requests; add --decompose: %w", ErrUsage)
	}
	in, err := openSource(cfg.Src)
	if err != nil {
		return nil, "", err
	}
	src, _ := filepath.Abs(cfg.Src)
	settings := settingsOf(src, in, cfg.Options)
	settings["decompose"] = decomposeSetting(&cfg.Decompose.Job)
	done, err := checkOut(cfg.fs(), cfg.Out, cfg.Src, fingerprint(in, settings))
	switch {
	case err != nil:
		return nil, "", err
	case done:
		return nil, "", fmt.Errorf("%s already holds this refinement: there is nothing left to plan: %w", cfg.Out, ErrUsage)
	}
	d, err := prepareDecomposition(ctx, in, cfg)
	if err != nil {
		return nil, "", err
	}
	if len(d.seeds) == 0 {
		return nil, "", ErrNothingToDecompose
	}
	doc, err := plan.Run(ctx, d.job, d.options(cfg), po)
	if err != nil {
		return nil, "", d.runError(err, "planning the decomposition")
	}
	return doc, d.job.Out, nil
}
