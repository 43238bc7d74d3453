// Command validate audits a rubric corpus: structural violations by record
// and item, validity rates by item type, item counts, pass rates, rollout
// lengths, tokens and cost, empirical validity, and the agreement of the
// stored validity verdicts with another judge (rejudge) or with people
// (sample, then agreement). It reads run directories, shard files and
// `distill export` directories (jsonl and verl), and prints text, JSON or
// a self-contained HTML page.
//
// Exit codes: 0 ok; 1 failed (the corpus could not be read or holds no record, a --min-validity,
// --max-violations, --min-auroc or --max-anti-share gate failed, the judge endpoint refused or nothing
// listens there, no item could be compared); 2 usage error (a path that is
// not a corpus: a problems file, an empty file); 3 finished, but part of the
// input is damaged (unreadable files or lines, repeated record ids) or some
// items could not be judged; 4 rejudge stopped by Ctrl-C (the figures of the
// items judged so far are printed).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/buildinfo"
	"github.com/rubricforge/rubricforge/internal/errwriter"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/outpath"
)

// version is set at build time (make build: -X main.version=...); main
// replaces an unset one by what the build information says (the module
// version go build derives from the VCS, else the revision).
var version = ""

const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitPartial = 3
)

func main() {
	version = buildinfo.Version(version)
	stdout := errwriter.New(os.Stdout) // a failed write to it fails the command
	os.Exit(stdout.ExitCode(run(os.Args[1:], stdout, os.Stderr, os.Getenv), "validate", os.Stderr))
}

const usage = `validate audits a rubric corpus.

Usage:
  validate [flags] CORPUS...               the audit: structure, validity, distributions, cost
  validate rejudge [flags] CORPUS          re-judge a seeded sample with another judge; agreement, kappa
  validate sample [flags] CORPUS           write a seeded sample of items for people to annotate (CSV)
  validate agreement --human FILE CORPUS   agreement and kappa of people's annotations with the corpus
  validate --human FILE CORPUS             the audit, validity corrected for the judge's errors against them
  validate review [flags] CORPUS           a local page to accept, reject and edit items (a review log)
  validate version

CORPUS is a run directory, an export directory (jsonl or verl) or shard files.
A corpus directory named like a command is given as ./NAME. Every command
explains its flags with -h.

Exit codes: 0 ok; 1 failed (unreadable or empty corpus, failed gate, endpoint refused
or unreachable, no item compared); 2 usage error (a path that is not a
corpus); 3 finished, but part of the input is damaged (unreadable files or
lines, repeated ids) or some items could not be judged; 4 rejudge stopped by
Ctrl-C (the figures so far are printed).
`

// env is what a command needs from its process.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := env{stdout, stderr, getenv}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "rejudge":
		return rejudgeCmd(ctx, args[1:], e)
	case "sample":
		return sampleCmd(ctx, args[1:], e)
	case "agreement":
		return agreementCmd(ctx, args[1:], e)
	case "review":
		return reviewCmd(ctx, args[1:], e)
	case "version", "--version":
		if len(args) > 1 && (args[1] == "-h" || args[1] == "--help" || args[1] == "-help" || args[1] == "help") {
			fmt.Fprint(stdout, "Usage: validate version\n\nPrints the build's version: the one make build sets (git describe), else what\nthe Go toolchain stamped into the binary (the module version, the VCS revision,\nits commit time, a modified tree).\n\nExit codes: 0 ok.\n")
			return exitOK
		}
		fmt.Fprintln(stdout, "validate", buildinfo.Read(version))
		return exitOK
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return auditCmd(ctx, args, e)
}

// parse parses flags and positional arguments in any order (`validate
// runs/x --json` and `validate --json runs/x` both work).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		rest := fs.Args()
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlags is a flag set whose -h prints text, the flags and the exit codes.
func newFlags(name, text string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text, "\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nExit codes: 0 ok; 1 failed; 2 usage error; 3 finished, but part of the input is damaged or some items could not be judged.\n")
	}
	return fs
}

// parseOrExit runs parse; done is true with the exit code when the command
// must end (help asked for, or a bad flag).
func parseOrExit(fs *flag.FlagSet, args []string) (pos []string, code int, done bool) {
	pos, err := parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, exitOK, true
	case err != nil:
		return nil, exitUsage, true
	}
	return pos, 0, false
}

// openCorpus opens the corpus paths, reporting errors with their exit code.
func openCorpus(cmd string, paths []string, e env) (*audit.Input, int, bool) {
	if len(paths) == 0 {
		fmt.Fprintf(e.stderr, "%s: no corpus given (a run directory, an export directory or shard files); see -h\n", cmd)
		return nil, exitUsage, false
	}
	in, err := audit.Open(paths...)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", cmd, err)
		if audit.IsUsage(err) {
			return nil, exitUsage, false
		}
		return nil, exitFailed, false
	}
	if in.Running {
		fmt.Fprintf(e.stderr, "%s: the run is still being written (a distill run holds it): reading the records committed so far\n", cmd)
	}
	return in, 0, true
}

// checkOutput refuses an output file that is an input, inside a run
// directory or export, a directory, or an existing file without --force.
func checkOutput(cmd, flag, path string, force bool, inputs []string, e env) bool {
	if err := outpath.File(flag, path, force, inputs...); err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", cmd, err)
		return false
	}
	return true
}

// writeFile writes what write produces to path atomically, or to stdout
// when path is "-".
func writeFile(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	if err := fsys.WriteFileAtomic(fsys.OS, path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func joinLines(xs []string) string { return strings.Join(xs, "\n  ") }
