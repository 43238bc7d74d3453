package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/pipeline"
)

const batchesUsage = `Usage:
  distill batches list RUN_DIR [--json]    every batch of a run in batch mode, from RUN_DIR/batches/journal.jsonl
  distill batches cancel RUN_DIR           cancel the run's open batches, keeping what they answered
  distill batches resolve RUN_DIR BATCH (--id ID | --forget)
                                           settle a lost batch (one the provider no longer knows)

list prints one line per batch: its local name (the files RUN_DIR/batches/NAME.*),
its phase in the run (written, uploaded, submitted, offline: waiting for
--batch-files output, ingested, dropped: not submitted), the provider's status,
the rows done of its rows, its stages, what ingesting found (answered, failed,
missing) and the provider's file and batch ids.

cancel asks the provider to cancel every batch the journal has submitted
(POST /v1/batches/ID/cancel), with the API keys of the environment variables
RUN_DIR/job.yaml names. A provider keeps what a cancelled batch answered. The
run polling the batches (a distill run going on now, or else the next distill
run on RUN_DIR) ingests those answers, submits no new batch and stops with
stopped_by batch_cancelled (exit 4); the distill run after that asks the rest.
cancel works whether or not a distill run is going on. A lost batch is cancelled when the provider
lists it by its input file or marker, and said to be lost when it does not.

A batch is lost when the provider answers 404 for its id and lists no batch of its input file or
marker (rubricforge_marker in its metadata): its rows wait (the provider may still answer them),
the run goes on with the rest and stops with stopped_by batch_lost, and each later run looks for it
again. resolve settles it while no run holds RUN_DIR: --id ID takes the batch the provider knows by
ID (its input file or marker must be this batch's; find it in the provider's console); --forget has
its rows asked again by the next run (paid again if the provider had answered them).

Examples:
  distill batches list runs/osti100k
  distill batches cancel runs/osti100k
  distill run --config job.yaml           # ingests the answers, stops: batch_cancelled
  distill batches resolve runs/osti100k b000003 --id batch_abc123
  distill batches resolve runs/osti100k b000003 --forget

Exit codes: 0 ok, 1 a batch could not be cancelled or resolved (or the journal is unreadable),
2 usage error (no such run directory).
`

func batchesCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, batchesUsage)
		return exitUsage
	}
	switch args[0] {
	case "list":
		return batchesListCmd(args[1:], stdout, stderr)
	case "cancel":
		return batchesCancelCmd(args[1:], stdout, stderr)
	case "resolve":
		return batchesResolveCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, batchesUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "distill batches: unknown command %q\n\n%s", args[0], batchesUsage)
	return exitUsage
}

// batchesRunDir parses a batches command's flags and run directory.
func batchesRunDir(fs *flag.FlagSet, args []string, stderr io.Writer, synopsis string) (string, bool, int) {
	usage := func(w io.Writer) {
		fmt.Fprint(w, batchesUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	dir, ok, code := parseDirAndFlags(fs, args, usage, stderr, synopsis)
	if !ok {
		return "", false, code
	}
	if code, ok := checkRunDir(fs.Name(), dir, stderr); !ok {
		return "", false, code
	}
	return dir, true, exitOK
}

func batchesListCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill batches list", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the journal's states as a JSON array")
	dir, ok, code := batchesRunDir(fs, args, stderr, "distill batches list RUN_DIR [--json]")
	if !ok {
		return code
	}
	states, err := pipeline.ReadBatches(dir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return exitFailed
	}
	if *asJSON {
		if states == nil {
			states = []llm.BatchState{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(states); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
			return exitFailed
		}
		return exitOK
	}
	if len(states) == 0 {
		fmt.Fprintf(stdout, "%s has no batches (no %s): its runs sent every request online\n", dir, pipeline.BatchDir(dir)+"/"+llm.BatchJournal)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tPHASE\tSTATUS\tDONE\tSTAGES\tANSWERED\tFAILED\tMISSING\tFILE\tPROVIDER BATCH")
	for _, s := range states {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", s.Local, s.Phase, orDash(s.Status), rowsDone(s),
			stageCounts(s.Stages), s.Answered, s.Failed, s.Missing, orDash(s.FileID), orDash(s.BatchID))
	}
	_ = tw.Flush() // a failed write stays in stdout, checked at exit (internal/errwriter)
	fmt.Fprintf(stdout, "batches: %s\n", llm.SummarizeBatches(states))
	for _, s := range states {
		if s.Note != "" {
			fmt.Fprintf(stdout, "%s: %s\n", s.Local, s.Note)
		}
	}
	return exitOK
}

func batchesCancelCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill batches cancel", flag.ContinueOnError)
	dir, ok, code := batchesRunDir(fs, args, stderr, "distill batches cancel RUN_DIR")
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done, err := pipeline.CancelBatches(ctx, dir, os.Getenv, nil)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return exitFailed
	}
	if len(done) == 0 {
		fmt.Fprintf(stdout, "%s has no open batches at a provider; nothing to cancel\n", dir)
		return exitOK
	}
	failed, rows, total := 0, 0, 0
	for _, c := range done {
		s := c.State
		if c.Err != nil {
			failed++
			fmt.Fprintf(stdout, "%s  %s  not cancelled: %v\n", s.Local, s.BatchID, c.Err)
			continue
		}
		n := c.After.RequestCounts
		rows, total = rows+n.Completed+n.Failed, total+s.Rows
		fmt.Fprintf(stdout, "%s  %s  %s  %d of %d rows done\n", s.Local, s.BatchID, c.After.Status, n.Completed+n.Failed, s.Rows)
	}
	fmt.Fprintf(stdout, "cancelled %d of %d open batches (%d of %d rows done); ", len(done)-failed, len(done), rows, total)
	fmt.Fprintf(stdout, "the run polling them (a distill run on %s now, else the next one) ingests what they answered and stops (batch_cancelled); the run after that asks the rest\n", dir)
	if failed > 0 {
		fmt.Fprintf(stderr, "%s: %d batch(es) could not be cancelled; they go on, and the run ingests them as usual\n", fs.Name(), failed)
		return exitFailed
	}
	return exitOK
}

func batchesResolveCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill batches resolve", flag.ContinueOnError)
	id := fs.String("id", "", "the batch id the provider knows the lost batch by")
	forget := fs.Bool("forget", false, "forget the lost batch: the next run asks its rows again")
	usage := func(w io.Writer) {
		fmt.Fprint(w, batchesUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if ok, code := parseFlags(fs, args, usage, stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 2 || (*id == "") == !*forget {
		fmt.Fprintf(stderr, "%s: want RUN_DIR BATCH and one of --id ID or --forget\nUsage: distill batches resolve RUN_DIR BATCH (--id ID | --forget) (see -h)\n", fs.Name())
		return exitUsage
	}
	if code, ok := checkRunDir(fs.Name(), pos[0], stderr); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := pipeline.ResolveBatch(ctx, pos[0], pos[1], *id, os.Getenv, nil)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return exitFailed
	}
	if *forget {
		fmt.Fprintf(stdout, "%s forgotten: the next distill run on %s asks its %d rows again\n", s.Local, pos[0], s.Rows)
	} else {
		fmt.Fprintf(stdout, "%s is batch %s (%s): the next distill run on %s polls and ingests it\n", s.Local, s.BatchID, s.Status, pos[0])
	}
	return exitOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rowsDone is a batch's rows done of its rows, as the provider counted.
func rowsDone(s llm.BatchState) string {
	if s.Phase == llm.PhaseIngested {
		return fmt.Sprintf("%d/%d", s.Answered+s.Failed, s.Rows)
	}
	return fmt.Sprintf("%d/%d", s.Counts.Completed+s.Counts.Failed, s.Rows)
}

// stageCounts is "distill=120,judge=80".
func stageCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return orDash(strings.Join(parts, ","))
}
