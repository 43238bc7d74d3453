package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/llm/cache"
)

const cacheUsage = `Usage: distill cache compact RUN_DIR

Rewrites the response cache of the run directory RUN_DIR (RUN_DIR/cache.db;
or RUN_DIR itself when it is a cache file) with only its live entries. Dropped: answers
replaced since, answers marked unusable because they did not parse, damaged
entries. What the run paid for is kept. A kill at any moment leaves the old
cache or the new one, whole. Refused while a run uses the cache.

Example:
  distill cache compact runs/math16k

Exit codes: 0 ok, 1 failed (a disk error, the cache in use by a run), 2 usage
error (a bad flag, no cache at RUN_DIR).
`

func cacheCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, cacheUsage)
		return exitUsage
	}
	switch args[0] {
	case "compact":
		return cacheCompactCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, cacheUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "distill cache: unknown command %q (want compact; see distill cache -h)\n", args[0])
		return exitUsage
	}
}

func cacheCompactCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill cache compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), cacheUsage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "distill cache compact: want one run directory or cache file (see -h)")
		return exitUsage
	}
	path := fs.Arg(0)
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		path = corpus.Layout{Dir: path}.Cache()
		_, err = os.Stat(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "distill cache compact: no response cache at %s\n", path)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	res, err := cache.Compact(path, cache.WithLogger(log))
	if err != nil {
		fmt.Fprintf(stderr, "distill cache compact: %v\n", err)
		return exitFailed
	}
	printCacheCompaction(stdout, path, res)
	return exitOK
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// printCacheCompaction says what compacting the cache at path kept and dropped.
func printCacheCompaction(w io.Writer, path string, res cache.CompactResult) {
	fmt.Fprintf(w, "%s: kept %d answers and %d unusable marks; dropped %d dead entries (%d damaged); %s -> %s\n",
		path, res.Entries, res.Tombstones, res.Dropped+res.Damaged, res.Damaged,
		byteSize(res.BytesBefore), byteSize(res.BytesAfter))
}
