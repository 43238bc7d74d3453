package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/rubricforge/rubricforge/corpus"
)

const repairUsage = `Usage: distill repair RUN_DIR

Recovers a run directory whose listed shards were damaged on disk (flipped
bytes, truncation, a deleted file), which distill run, compact, export and
status report by name. Every listed shard is hashed in full; the damaged ones
are moved into RUN/shards/broken/ and unlisted, every other record stays. Then
run the same distill run again: it makes the lost records again, and every
request the run answered before comes from its response cache (RUN/cache.db),
so nothing is paid twice. A run without damage is left as it is. Refused
while a run uses the directory.

Example:
  distill repair runs/math16k && distill run --config job.yaml

Exit codes: 0 ok (repaired, or nothing to repair), 1 failed, 2 usage error.
`

func repairCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill repair", flag.ContinueOnError)
	usage := func(w io.Writer) { fmt.Fprint(w, repairUsage) }
	dir, ok, code := parseDirAndFlags(fs, args, usage, stderr, "distill repair RUN_DIR")
	if !ok {
		return code
	}
	if code, ok := checkRunDir(fs.Name(), dir, stderr); !ok {
		return code
	}
	res, err := corpus.Repair(dir, corpus.Options{Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		fmt.Fprintf(stderr, "distill repair: %v\n", err)
		return exitFailed
	}
	if len(res.Damaged) == 0 {
		fmt.Fprintf(stdout, "%s: every listed shard matches its manifest entry; nothing to repair\n", dir)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: %d damaged shard(s) moved aside into %s/broken/, %d records to make again:\n", dir, len(res.Damaged), corpus.ShardsDir, res.RowsLost)
	for _, d := range res.Damaged {
		fmt.Fprintf(stdout, "  %s (%d records): %s\n", d.File, d.Rows, d.Reason)
	}
	fmt.Fprintln(stdout, "Run the same distill run again to make them; requests answered before come from the response cache.")
	return exitOK
}

// checkRunDir refuses a RUN argument that is not a run directory, with the
// same exit code (usage error) in every command.
func checkRunDir(cmd, dir string, stderr io.Writer) (code int, ok bool) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(stderr, "%s: %s does not exist\n", cmd, dir)
		return exitUsage, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitUsage, false
	case !st.IsDir():
		fmt.Fprintf(stderr, "%s: %s is not a run directory\n", cmd, dir)
		return exitUsage, false
	}
	if _, err := os.Stat(corpus.Layout{Dir: dir}.Manifest()); err != nil {
		if _, rerr := os.Stat(corpus.Layout{Dir: dir}.Report()); rerr != nil {
			fmt.Fprintf(stderr, "%s: %s is not a run directory (no %s)\n", cmd, dir, corpus.ManifestName)
			return exitUsage, false
		}
	}
	return exitOK, true
}
