package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/review"
)

// logList is --review: repeated, comma-separated, or a directory of logs.
type logList []string

func (l *logList) String() string { return strings.Join(*l, ",") }

func (l *logList) Set(s string) error {
	*l = append(*l, splitList(s)...)
	return nil
}

// reviewLogs expands the directories among the --review paths into the
// logs they hold.
func reviewLogs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--review %s: %w", p, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		logs, err := filepath.Glob(filepath.Join(p, "*.jsonl"))
		if err != nil || len(logs) == 0 {
			return nil, fmt.Errorf("--review %s: the directory holds no review log (*.jsonl)", p)
		}
		out = append(out, logs...)
	}
	return out, nil
}

// reviewApplier reads the logs, checks that they were written for the
// corpus at run, and returns what applies their decisions under policy.
// Conflicts without a policy are an error that lists them.
func reviewApplier(ctx context.Context, run string, paths []string, policy string) (corpus.ExportReview, error) {
	p, err := review.ParsePolicy(policy)
	if err != nil {
		return nil, err
	}
	logs, err := reviewLogs(paths)
	if err != nil {
		return nil, err
	}
	in, err := audit.Open(run)
	if err != nil {
		return nil, fmt.Errorf("reading %s for its review fingerprint: %w", run, err)
	}
	fp, err := review.Fingerprint(ctx, in)
	if err != nil {
		return nil, err
	}
	d, err := review.ReadDecisions(logs, fp)
	if err != nil {
		return nil, err
	}
	return review.NewApplier(d, p)
}
