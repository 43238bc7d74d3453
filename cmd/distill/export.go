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
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/outpath"
	"github.com/rubricforge/rubricforge/review"
)

const exportUsage = `Usage: distill export RUN_DIR --format verl|rar|srar-lines|jsonl --out DIR [flags]

Writes the corpus in the run directory RUN_DIR (or one shard file) in the dataset
format an RL trainer reads: data/{split}-NNNNN-of-NNNNN.{parquet|jsonl}, a
dataset card README.md that HF datasets and the Hub read, and export.json
(counts, files with their hashes, provenance). The prompt the policy sees never
holds the rubric, the reference or the answer; a verl prompt asks for the answer
format the corpus's rollouts were asked for (step headers, answer tag): their
rollout template around the problem, unless --system-prompt or --user-template
say otherwise. Rows are in id order, a repeated id exported once; running the
same command again writes the same bytes.

Formats:
  verl        data_source, prompt (chat messages), ability, reward_model, extra_info
              (with the rubric as JSON), plus label (the reward spec rewardd reads,
              for OpenRLHF and slime) and solution (for TRL)
  rar         question, reference_answer, question_source, rubric [{title,
              description, weight}], id: the ScaleAI RaR datasets' shape
  srar-lines  problem, rubric as "<<TYPE>>: text" lines, ground_truth, id
  jsonl       the full records, one JSON object per line

Examples:
  distill export runs/demo --format verl --out exports/demo-verl
  distill export runs/math16k --format verl --out exports/math16k --valid-only \
      --system-prompt prompts/system.txt --split train,validation
  distill export runs/math16k --format rar --out exports/math16k-rar --rows-per-file 50000
  distill export runs/math16k --format verl --role reasoner,rubricator --out exports/math16k-rlcer
  distill export runs/math16k --format verl --split test --hints --out exports/math16k-test-hints
  distill export runs/demo --format verl --out exports/demo-reviewed --review runs/demo/review
  distill export runs/demo --format verl --out exports/demo-reviewed \
      --review runs/demo/review/alice.jsonl,runs/demo/review/bob.jsonl --review-policy reviewer:alice

People's review (validate review): --review applies the decisions of review
logs: rejected items dropped, edits applied, accepted and edited items marked
valid; export.json's "review" section and the card say how many, and by whom.
A log written for another corpus is refused. When reviewers decided an item
differently the export stops and lists the items, unless --review-policy says
how to settle them: latest (the later decision), unanimous (a disputed item
is left as the corpus has it) or reviewer:NAME (NAME's decision first).

Flags:
`

// exportFlags are the flags of distill export.
type exportFlags struct {
	fs                               *flag.FlagSet
	format, out, split, systemPrompt *string
	userTemplate, reviewPolicy, role *string
	review                           logList
	validOnly, force, hints          *bool
	rowsPerFile                      *int
}

func newExportFlags(stderr io.Writer) *exportFlags {
	fs := flag.NewFlagSet("distill export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &exportFlags{fs: fs}
	f.format = fs.String("format", "", "verl, rar, srar-lines or jsonl (required); e.g. --format verl")
	f.out = fs.String("out", "", "export directory, created if missing (required); e.g. --out exports/demo-verl")
	f.split = fs.String("split", "", "splits to export, comma-separated (default: every split the corpus has); e.g. --split train,validation")
	f.systemPrompt = fs.String("system-prompt", "", "verl only: file whose text is sent as a system message before every problem; e.g. --system-prompt system.txt")
	f.userTemplate = fs.String("user-template", "", "verl only: rollout template file whose messages are the prompt, {{.Problem}} marking the problem (the format of prompts/templates/rollout.tmpl); default: the rollout template the corpus's rollouts were sampled with; give the run's own when it used --prompts-dir; e.g. --user-template my-prompts/rollout.tmpl")
	f.validOnly = fs.Bool("valid-only", false, "drop the items the validity judge marked invalid, and the records whose rubric then no longer holds (counted in export.json)")
	f.rowsPerFile = fs.Int("rows-per-file", corpus.DefaultRowsPerFile, "most rows in one data file; e.g. --rows-per-file 50000 (slime reads one file: make it hold the whole split)")
	fs.Var(&f.review, "review", "review logs to apply (validate review writes them): files, comma-separated or repeated, or a directory of them; e.g. --review runs/demo/review")
	f.reviewPolicy = fs.String("review-policy", "", "how conflicting review decisions are settled: latest, unanimous or reviewer:NAME (default: none; conflicts stop the export); e.g. --review-policy latest")
	f.role = fs.String("role", corpus.RoleReasoner, "verl only: whose rows: reasoner (the problem), rubricator (RLCER's rubricator prompt over the problem and one of its stored rollouts, the first flawed one; ability \"rubricator\"), or both, comma-separated: each record's reasoner row then its rubricator row, one dataset for a trainer of both roles (docs/training-loops.md); e.g. --role reasoner,rubricator")
	f.hints = fs.Bool("hints", false, "verl only: append the rubric's criteria to the reasoner's prompt as hints (RGR 5.2, RLCER 5.5), for evaluation; ANSWER and FACTUAL items, which state a result, are left out")
	f.force = fs.Bool("force", false, "write into --out even though it holds files that are not an earlier export (those are left as they are)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), exportUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nExit codes: 0 ok, 1 failed (unreadable corpus, disk error, a review log of another corpus, reviewers' conflicting decisions without --review-policy; an earlier export stays as it was), 2 usage error (a bad flag, no such RUN_DIR, --out refused, a format that cannot hold the corpus: srar-lines of grounded or factual_process records), 4 stopped (Ctrl-C; an earlier export stays as it was).\n")
	}
	return f
}

// parse reads flags and the one positional argument in any order.
func (f *exportFlags) parse(args []string) (run string, err error) {
	var pos []string
	for {
		if err := f.fs.Parse(args); err != nil {
			return "", err
		}
		if f.fs.NArg() == 0 {
			break
		}
		pos = append(pos, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
	if len(f.review) > 0 {
		// --review a.jsonl b.jsonl: a shell's expansion of review/*.jsonl.
		for len(pos) > 1 && strings.HasSuffix(pos[len(pos)-1], ".jsonl") {
			f.review = append(f.review, pos[len(pos)-1])
			pos = pos[:len(pos)-1]
		}
	}
	if len(pos) != 1 {
		return "", fmt.Errorf("want one run directory, got %d arguments", len(pos))
	}
	return pos[0], nil
}

func exportCmd(args []string, stdout, stderr io.Writer) int {
	f := newExportFlags(stderr)
	run, err := f.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		if !strings.Contains(err.Error(), "flag provided but not defined") {
			fmt.Fprintf(stderr, "distill export: %v (see -h)\n", err)
		}
		return exitUsage
	}
	opt := corpus.ExportOptions{
		Format: *f.format, Out: *f.out, Splits: splitList(*f.split), ValidOnly: *f.validOnly, Role: *f.role, Hints: *f.hints,
		RowsPerFile: *f.rowsPerFile, Force: *f.force, ToolVersion: toolVersion(),
		Logger: slog.New(slog.NewTextHandler(stderr, nil)),
	}
	if *f.rowsPerFile <= 0 {
		fmt.Fprintln(stderr, "distill export: --rows-per-file must be positive")
		return exitUsage
	}
	if *f.systemPrompt != "" {
		data, err := os.ReadFile(*f.systemPrompt)
		if err != nil {
			fmt.Fprintf(stderr, "distill export: --system-prompt: %v\n", err)
			return exitUsage
		}
		if opt.SystemPrompt = strings.TrimSpace(string(data)); opt.SystemPrompt == "" {
			fmt.Fprintf(stderr, "distill export: --system-prompt: %s is empty\n", *f.systemPrompt)
			return exitUsage
		}
		opt.SystemPromptFile = *f.systemPrompt
	}
	opt.UserTemplateFile = *f.userTemplate
	if err := opt.Check(); err != nil {
		fmt.Fprintf(stderr, "distill export: %v\n", err)
		return exitUsage
	}
	if _, err := os.Stat(run); err != nil {
		fmt.Fprintf(stderr, "distill export: %s: no such run directory or shard\n", run)
		return exitUsage
	}
	if err := outpath.Dir("--out", opt.Out, run); err != nil {
		fmt.Fprintf(stderr, "distill export: %v\n", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := review.ParsePolicy(*f.reviewPolicy); err != nil {
		fmt.Fprintf(stderr, "distill export: %v\n", err)
		return exitUsage
	}
	if len(f.review) > 0 {
		if opt.Review, err = reviewApplier(ctx, run, f.review, *f.reviewPolicy); err != nil {
			fmt.Fprintf(stderr, "distill export: %v\n", err)
			return exitFailed
		}
	} else if *f.reviewPolicy != "" {
		fmt.Fprintln(stderr, "distill export: --review-policy needs --review LOG...")
		return exitUsage
	}
	return exportRun(ctx, run, opt, stdout, stderr)
}

// exportRun exports and says how it ended: exit 4 when ctx stopped it
// (Ctrl-C) before anything was put in place.
func exportRun(ctx context.Context, run string, opt corpus.ExportOptions, stdout, stderr io.Writer) int {
	_, statErr := os.Stat(filepath.Join(opt.Out, corpus.ExportManifestName))
	m, err := corpus.Export(ctx, run, opt)
	switch {
	case errors.Is(err, corpus.ErrExportStopped) && statErr == nil:
		fmt.Fprintf(stderr, "distill export: stopped; the earlier export in %s is unchanged\n", opt.Out)
		return exitStopped
	case errors.Is(err, corpus.ErrExportStopped):
		fmt.Fprintf(stderr, "distill export: stopped; nothing was written to %s\n", opt.Out)
		return exitStopped
	case errors.Is(err, corpus.ErrFormatRefused):
		fmt.Fprintf(stderr, "distill export: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "distill export: %v\n", err)
		return exitFailed
	}
	writeExportSummary(stdout, opt.Out, m)
	return exitOK
}

func writeExportSummary(w io.Writer, out string, m *corpus.ExportManifest) {
	fmt.Fprintf(w, "export: %s (%s%s), %d records in, %d out", out, m.Format, rolesNote(m), m.RecordsIn, m.RecordsOut)
	if m.ValidOnly {
		fmt.Fprintf(w, ", %d dropped (rubric no longer holds), %d invalid items dropped", m.RecordsDropped, m.ItemsDropped)
	}
	fmt.Fprintln(w)
	writeExportRoles(w, m)
	if r := m.Review; r != nil {
		fmt.Fprintf(w, "  review: %d items rejected, %d edited, %d accepted (%s); %d records dropped, %d conflicts (policy %s), %d stale decisions not applied\n",
			r.ItemsRejected, r.ItemsEdited, r.ItemsAccepted, reviewers(r.Reviewers), r.RecordsDropped, r.Conflicts, r.Policy, r.Stale)
	}
	for _, s := range corpus.ExportSplits {
		if c, ok := m.Splits[s]; ok {
			fmt.Fprintf(w, "  %-10s %7d rows in %d files\n", s, c.Rows, c.Files)
		}
	}
	fmt.Fprintf(w, "  card %s/%s, manifest %s/%s\n", out, corpus.DatasetCardName, out, corpus.ExportManifestName)
}

// reviewers names each reviewer with their counts.
func reviewers(cs []corpus.ReviewerCounts) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s: %d rejected, %d edited, %d accepted", c.Reviewer, c.Rejected, c.Edited, c.Accepted))
	}
	return strings.Join(parts, "; ")
}
