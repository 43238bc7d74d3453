package refine

import (
	"context"
	"errors"
	"log/slog"

	"github.com/rubricforge/rubricforge/corpus"
)

// StatsConfig is a refinement by a training run's live statistics
// (distill refine --from-stats): from Src, with the state directory
// StatsDir of the run's rewardd, into Out.
type StatsConfig struct {
	Src, Out, StatsDir string
	// SkipSplit skips, unchanged, the problems two replicas kept (their
	// statistics are split); without it such a state directory is refused.
	SkipSplit   bool
	ShardRows   int
	ToolVersion string
	Logger      *slog.Logger
}

// FromStats folds a training run's live rubric into a new corpus.
func FromStats(ctx context.Context, cfg StatsConfig) (*corpus.FromStats, error) {
	return nil, errors.New("not yet")
}
