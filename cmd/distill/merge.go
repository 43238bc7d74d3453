package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/workers"
)

const mergeUsage = `Usage: distill merge RUN_DIR... --out DIR [flags]

Merges the run directories of a partitioned job's workers (distill run
--partition I/K, one per partition) into one corpus in --out: the records of
every worker in shards re-cut to --shard-rows, one manifest, their failures,
a report that adds up theirs, and their response caches merged into
DIR/cache.db (their answers and what they paid: a run in DIR reports the
workers' tokens and cost, and a variant run with --cache DIR/cache.db pays
only for new answers). The merged corpus is what one machine would have made
(the job without a partition: its fingerprint and job.yaml), and validate,
distill export and distill status read it like any run directory.

It refuses, naming every reason, unless the directories hold one job apart
from the partition, read the same input (the content digests of the input
files in their manifests), hold every partition 0..K-1 exactly once, and
every worker has finished; --out must be a directory apart from the
workers' (not their parent). Records are committed like a run's: a merge that is interrupted or
killed resumes when run again, skipping what it already wrote.

Examples:
  distill merge runs/big/part-* --out runs/big/all
  distill merge runs/big/part-* --out runs/big/all --shard-rows 5000

Flags:
`

func mergeCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill merge", flag.ContinueOnError)
	out := fs.String("out", "", "the merged run directory (created if missing; a merge into it resumes); e.g. runs/big/all")
	shardRows := fs.Int("shard-rows", 0, "records per shard of the merged corpus (0: the workers' output.shard_rows); e.g. 5000")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error; e.g. warn to see only problems")
	usage := func(w io.Writer) {
		fmt.Fprint(w, mergeUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fmt.Fprint(w, "\nExit codes: 0 merged; 1 refused or failed (the reasons are printed); 2 usage error; 4 interrupted (run the same command again to resume).\n")
	}
	dirs, ok, code := parseDirsAndFlags(fs, args, usage, stderr, "distill merge RUN_DIR... --out DIR")
	if !ok {
		return code
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "distill merge: --log-level: %v\n", err)
		return exitUsage
	}
	if *out == "" {
		fmt.Fprintf(stderr, "distill merge: --out is required: the directory of the merged corpus, e.g. --out runs/big/all\n")
		return exitUsage
	}
	if *shardRows < 0 {
		fmt.Fprintf(stderr, "distill merge: --shard-rows %d: must not be negative\n", *shardRows)
		return exitUsage
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := watchSignals(context.Background(), sigs, func() { signal.Reset(os.Interrupt) }, func() { signal.Stop(sigs) }, stderr, false)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	rep, err := workers.Merge(ctx, dirs, *out, workers.MergeOptions{ShardRows: *shardRows, ToolVersion: version, Logger: log})
	stop()
	var ue *job.UsageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "distill merge: %v\n", err)
		return exitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "distill merge: interrupted; what was written is kept: run the same command again to finish\n")
		return exitStopped
	case err != nil:
		fmt.Fprintf(stderr, "distill merge: %v\n", err)
		return exitFailed
	}
	rep.WriteSummary(stdout, *out)
	return exitOK
}
