package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rubricforge/rubricforge/audit"
)

const sampleUsage = `Usage: validate sample [flags] CORPUS

Draws a reproducible sample of judged rubric items and grounded criteria
(the same --seed and corpus always draw the same items; a larger --n draws
a superset) and writes them as a CSV sheet for people to annotate: one row
per item with the problem, the ground truth, the item's type and text, and
an empty human_valid column to fill in with valid or invalid (an optional
human_note column for remarks). A grounded criterion's row has its
question's id as record_id, its position in the question as item_id, type
criterion, its description as the item, the question as the problem and the
passage as the ground truth it is judged against. The stored verdicts are not in the sheet, so the
annotation is blind. Then run validate agreement on the filled-in sheet,
or validate --human to correct the validity rates for the judge's errors.

Examples:
  validate sample runs/math16k --n 100 --seed 1 --out items.csv
  validate agreement runs/math16k --human items.csv
  validate runs/math16k --human items.csv
`

func sampleCmd(ctx context.Context, args []string, e env) int {
	fs := newFlags("validate sample", sampleUsage, e)
	n := fs.Int("n", 100, "items to draw")
	seed := fs.Uint64("seed", 1, "seed of the draw")
	out := fs.String("out", "-", "CSV file to write (- for stdout); e.g. items.csv")
	unjudged := fs.Bool("include-unjudged", false, "draw among all items, not only those with a stored verdict")
	force := fs.Bool("force", false, "replace the --out file when it exists (an annotated sheet is lost)")
	paths, code, done := parseOrExit(fs, args)
	if done {
		return code
	}
	if !checkOutput("validate sample", "--out", *out, *force, paths, e) {
		return exitUsage
	}
	if *n <= 0 {
		fmt.Fprintln(e.stderr, "validate sample: --n must be positive")
		return exitUsage
	}
	if len(paths) > 1 {
		fmt.Fprintln(e.stderr, "validate sample: give one corpus")
		return exitUsage
	}
	in, code, ok := openCorpus("validate sample", paths, e)
	if !ok {
		return code
	}
	items, eligible, problems, err := audit.SampleItems(ctx, in, *n, *seed, !*unjudged, true)
	if err != nil {
		fmt.Fprintf(e.stderr, "validate sample: %v\n", err)
		return exitFailed
	}
	if err := writeFile(*out, e.stdout, func(w io.Writer) error { return audit.WriteSheet(w, items) }); err != nil {
		fmt.Fprintf(e.stderr, "validate sample: %v\n", err)
		return exitFailed
	}
	what := "judged items"
	if *unjudged {
		what = "items"
	}
	fmt.Fprintf(e.stderr, "validate sample: drew %d of %d %s (seed %d) into %s\n", len(items), eligible, what, *seed, *out)
	if len(problems) > 0 {
		fmt.Fprintf(e.stderr, "validate sample: part of the corpus could not be read:\n  %s\n", problemLines(problems))
		return exitPartial
	}
	if len(items) < *n {
		fmt.Fprintf(e.stderr, "validate sample: the corpus holds only %d %s\n", eligible, what)
	}
	return exitOK
}
