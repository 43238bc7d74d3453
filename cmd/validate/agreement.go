package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rubricforge/rubricforge/audit"
)

const agreementUsage = `Usage: validate agreement --human FILE [flags] CORPUS

Compares people's verdicts in an annotation sheet (written by validate
sample, human_valid filled in with valid or invalid; yes/no, true/false and
1/0 work too) with the verdicts stored in the corpus: agreement rate and
Cohen's kappa, overall and by item type, the confusion counts and the items
judged differently. Rows left blank are skipped; rows whose item is no
longer in the corpus or whose text changed are counted and left out.

Example:
  validate agreement runs/math16k --human items.csv
`

func agreementCmd(ctx context.Context, args []string, e env) int {
	fs := newFlags("validate agreement", agreementUsage, e)
	human := fs.String("human", "", "the filled-in annotation sheet (CSV); e.g. items.csv")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	paths, code, done := parseOrExit(fs, args)
	if done {
		return code
	}
	if *human == "" || len(paths) != 1 {
		fmt.Fprintln(e.stderr, "validate agreement: give one corpus and --human FILE; see -h")
		return exitUsage
	}
	anns, err := readSheet(*human)
	if err != nil {
		fmt.Fprintf(e.stderr, "validate agreement: %v\n", err)
		return exitUsage
	}
	in, code, ok := openCorpus("validate agreement", paths, e)
	if !ok {
		return code
	}
	rep, err := audit.HumanAgreement(ctx, in, anns, *human)
	if err != nil {
		fmt.Fprintf(e.stderr, "validate agreement: %v\n", err)
		return exitFailed
	}
	rep.Tool = "validate " + version
	return writeAgreement("validate agreement", rep, *asJSON, e)
}

// printAgreement prints rep on stdout; false (said on stderr) when it
// could not.
func printAgreement(cmd string, rep *audit.AgreementReport, asJSON bool, e env) bool {
	write := rep.WriteText
	if asJSON {
		write = rep.WriteJSON
	}
	if err := write(e.stdout); err != nil && !errors.Is(err, io.ErrShortWrite) {
		fmt.Fprintf(e.stderr, "%s: writing the report: %v\n", cmd, err)
		return false
	}
	return true
}

func readSheet(path string) ([]audit.Annotation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("annotation sheet: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	return audit.ReadSheet(f, path)
}

// writeAgreement prints an agreement report and returns the exit code: 1
// when no item could be compared, 3 when part of the corpus could not be
// read or items could not be judged.
func writeAgreement(cmd string, rep *audit.AgreementReport, asJSON bool, e env) int {
	if !printAgreement(cmd, rep, asJSON, e) {
		return exitFailed
	}
	if why := rep.NothingCompared(); why != "" {
		fmt.Fprintf(e.stderr, "%s: %s\n", cmd, why)
		return exitFailed
	}
	code := exitOK
	if len(rep.InputProblems) > 0 {
		fmt.Fprintf(e.stderr, "%s: part of the corpus could not be read:\n  %s\n", cmd, problemLines(rep.InputProblems))
		code = exitPartial
	}
	if s := rep.Sample; s != nil && s.Failed > 0 {
		why := "their requests failed or the replies never parsed (see the warnings above)"
		if s.Stopped != "" {
			why = string(s.Stopped)
		}
		fmt.Fprintf(e.stderr, "%s: %d of %d drawn items were not judged: %s\n", cmd, s.Failed, s.Drawn, why)
		code = exitPartial
	}
	if p := rep.Panel; p != nil {
		for _, j := range p.Judges {
			if j.Failed > 0 {
				fmt.Fprintf(e.stderr, "%s: judge %s gave no verdict on %d of the items the panel judged (each counted as a vote against; see the warnings above)\n",
					cmd, j.Name, j.Failed)
				code = exitPartial
			}
		}
	}
	return code
}
