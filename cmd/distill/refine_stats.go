package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rubricforge/rubricforge/refine"
)

// fromStatsCmd is distill refine SRC --from-stats DIR --out DST.
func (f *refineFlags) fromStatsCmd(src string, stdout, stderr io.Writer) int {
	var other []string
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "from-stats", "skip-split", "out", "shard-rows", "json":
		default:
			other = append(other, "--"+fl.Name)
		}
	})
	switch {
	case *f.fromStats == "":
		fmt.Fprintln(stderr, "distill refine: --skip-split applies only to --from-stats (see -h)")
		return exitUsage
	case len(other) > 0:
		fmt.Fprintf(stderr, "distill refine: %s: --from-stats folds a training run's live statistics in and takes only --out, --skip-split, --shard-rows and --json (see -h)\n", strings.Join(other, ", "))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := refine.StatsConfig{Src: src, Out: *f.out, StatsDir: *f.fromStats, SkipSplit: *f.skipSplit, ShardRows: *f.shardRows,
		ToolVersion: toolVersion(), Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	sum, err := refine.FromStats(ctx, cfg)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "distill refine: stopped; %s was not written\n", cfg.Out)
		return exitStopped
	case err != nil && refine.IsUsage(err):
		fmt.Fprintf(stderr, "distill refine: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "distill refine: %v\n", err)
		return exitFailed
	}
	if *f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			fmt.Fprintf(stderr, "distill refine: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	refine.WriteStatsText(stdout, sum, cfg.Out)
	return exitOK
}
