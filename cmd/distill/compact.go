package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm/cache"
)

const compactUsage = `Usage: distill compact RUN_DIR

Merges the small shards that checkpoints leave (fewer than half of
output.shard_rows records) into full ones, then rewrites the response cache
without its dead entries (as distill cache compact does) when they are at
least 5% of its log: a rewrite copies every live answer. A finished run does
this itself; use it on a run stopped early, or one built by an older version.
Each merge is crash-safe: the new shard is made durable and listed in the
manifest before the old ones are removed, so a kill at any moment loses
nothing. Refused while a run uses the directory.

Flags:
  --shard-rows N   records per merged shard (default: the run's output.shard_rows,
                   else 1000; e.g. --shard-rows 5000)

Example:
  distill compact runs/math16k

Exit codes: 0 ok, 1 failed (a damaged shard, a disk error, the directory in use
by a run), 2 usage error (a bad flag, no such RUN_DIR).
`

func compactCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill compact", flag.ContinueOnError)
	shardRows := fs.Int("shard-rows", 0, "records per merged shard")
	usage := func(w io.Writer) { fmt.Fprint(w, compactUsage) }
	dir, ok, code := parseDirAndFlags(fs, args, usage, stderr, "distill compact RUN_DIR")
	if !ok {
		return code
	}
	if *shardRows < 0 {
		fmt.Fprintf(stderr, "distill compact: --shard-rows must be positive, got %d\n", *shardRows)
		return exitUsage
	}
	if code, ok := checkRunDir(fs.Name(), dir, stderr); !ok {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := compactRun(dir, *shardRows, log, stdout); err != nil {
		fmt.Fprintf(stderr, "distill compact: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// compactRun merges the run's small shards, then compacts its cache.
func compactRun(dir string, shardRows int, log *slog.Logger, stdout io.Writer) error {
	if err := compactShards(dir, shardRows, log, stdout); err != nil {
		return err
	}
	cache := corpus.Layout{Dir: dir}.Cache()
	if _, err := os.Stat(cache); err != nil {
		return nil
	}
	return compactCache(cache, log, stdout)
}

func compactShards(dir string, shardRows int, log *slog.Logger, stdout io.Writer) error {
	if shardRows <= 0 {
		shardRows = runShardRows(dir)
	}
	run, err := corpus.Open(dir, corpus.Options{ShardRows: shardRows, Logger: log})
	if err != nil {
		return err
	}
	if err := run.VerifyShards(); err != nil {
		_ = run.Close() // nothing was written; err is the failure
		return err
	}
	before := len(run.Manifest().Shards)
	c, err := run.Compact()
	if cerr := run.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d shards -> %d (%d small shards merged into %d)\n", dir, before, before-c.Merged+c.Written, c.Merged, c.Written)
	return nil
}

// deadWorthRewrite is the share of a cache's log entries that must be dead
// (replaced, or damaged) before distill compact rewrites it: a rewrite
// copies every live answer, so a few dead entries in a large cache are not
// worth it. distill cache compact rewrites whatever the share.
const deadWorthRewrite = 0.05

// compactCache rewrites the cache at path when enough of it is dead.
func compactCache(path string, log *slog.Logger, stdout io.Writer) error {
	c, err := cache.Open(path, cache.WithLogger(log))
	if err != nil {
		return err
	}
	st := c.Stats()
	dead := st.Records - int64(st.Entries+st.Tombstones) + st.Damaged
	records := st.Records + st.Damaged
	switch {
	case dead <= 0:
		fmt.Fprintf(stdout, "%s: %d answers, no dead entries to drop\n", path, st.Entries)
		return c.Close()
	case float64(dead) < deadWorthRewrite*float64(records):
		fmt.Fprintf(stdout, "%s: %d answers; %d dead entries (%.1f%% of %d), under the %.0f%% worth a rewrite (distill cache compact %s rewrites it anyway)\n",
			path, st.Entries, dead, 100*float64(dead)/float64(records), records, 100*deadWorthRewrite, path)
		return c.Close()
	}
	res, err := c.Compact()
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	printCacheCompaction(stdout, path, res)
	return nil
}

// runShardRows is the output.shard_rows of the job in RUN/job.yaml, else
// the default.
func runShardRows(dir string) int {
	jb, err := job.LoadJobFile(corpus.Layout{Dir: dir}.Job())
	if err != nil || jb.Output.ShardRows < 1 {
		return job.DefaultJob().Output.ShardRows
	}
	return jb.Output.ShardRows
}
