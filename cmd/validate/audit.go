package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/rubricforge/rubricforge/audit"
)

const auditUsage = `Usage: validate [flags] CORPUS...

Audits a corpus: structural violations listed by record id and item id,
validity by item type, items per record by type, PITFALL x BONUS
co-occurrence, pass rates, rollout lengths, tokens and cost, provenance,
empirical validity and discrimination (item edges, rubric AUROC, saturated,
dead, anti-discriminative and redundant items, from the stored satisfaction
verdicts; docs/discrimination.md). The text report goes to stdout; --json
prints the same figures as JSON; --html writes a self-contained page with
charts.

CORPUS is a run directory, a distill export directory (jsonl or verl) or
shard files (.parquet, .jsonl). rar and srar-lines exports cannot be audited.

Examples:
  validate runs/math16k
  validate runs/math16k --json > audit.json
  validate runs/math16k --html audit.html
  validate runs/math16k --min-validity 0.95 --max-violations 0   # a CI gate: exit 1 when below
  validate runs/math16k --min-auroc 0.8 --max-anti-share 0.02     # gate on discrimination
  validate runs/math16k --human items.csv --min-validity 0.9 --gate-on lower
  validate exports/math16k-verl

Validity is also reported with 95% intervals: Wilson intervals of the
judge's rates, or, with --human and a sheet people labelled (validate
sample), the judge's sensitivity and specificity against them and the rate
corrected for its errors (docs/judge-reliability.md).

Other commands, each with its own -h: validate rejudge (another judge's
verdicts on a sample), validate sample and validate agreement (people's),
validate review (a page to accept, reject and edit items; when CORPUS/review
holds its logs, the text report ends with the review's coverage and kappa),
validate version; validate help lists them.
`

func auditCmd(ctx context.Context, args []string, e env) int {
	fs := newFlags("validate", auditUsage, e)
	asJSON := fs.Bool("json", false, "print the report as JSON (keys documented in docs/validate.md)")
	htmlPath := fs.String("html", "", "also write the report as one self-contained HTML page to this file; e.g. audit.html")
	minValidity := fs.Float64("min-validity", -1, "gate: exit 1 when the overall validity rate (valid / judged) is below this; e.g. 0.95 (-1: off)")
	fs.Float64Var(minValidity, "min-valid-rate", -1, "another name for --min-validity; e.g. 0.9")
	gateOn := fs.String("gate-on", "rate", "what --min-validity and --min-auroc check: rate (the judge's overall rate, the mean AUROC) or lower (the lower bound of its 95% interval: the corrected rate's with --human, else Wilson's; the AUROC's over records and rollouts); e.g. lower")
	human := fs.String("human", "", "an annotation sheet people labelled (validate sample): correct the validity rates for the judge's errors; e.g. items.csv")
	maxViolations := fs.Int64("max-violations", -1, "gate: exit 1 when there are more structural violations than this; e.g. 0 (-1: off)")
	minAUROC := fs.Float64("min-auroc", -1, "gate: exit 1 when the mean rubric AUROC of the measured records (on a corpus distill refine made: the held-out one of its refine.json) is below this, or no record is measured; e.g. 0.8 (-1: off)")
	judgeError := fs.Float64("judge-error", 0, "the satisfaction judge's error rate that saturated, dead and redundant tolerate, e.g. as measured against people's labels (0: the default, 0.05); e.g. --judge-error 0.08")
	maxAnti := fs.Float64("max-anti-share", -1, "gate: exit 1 when more than this share of the measured items is anti-discriminative, or no record is measured; e.g. 0.02 (-1: off)")
	maxItems := fs.Int("max-items", 0, "SRaR item limit to check (0: the run's distill.max_items, else 12)")
	list := fs.Int("list", audit.DefaultList, "violations listed in full, in corpus order (0: all); the counts are always exact")
	force := fs.Bool("force", false, "replace the --html file when it exists")
	paths, code, done := parseOrExit(fs, args)
	if done {
		return code
	}
	if !checkOutput("validate", "--html", *htmlPath, *force, paths, e) {
		return exitUsage
	}
	if *minValidity > 1 || *list < 0 || *maxItems < 0 {
		fmt.Fprintln(e.stderr, "validate: --min-validity is a rate from 0 to 1; --list and --max-items are not negative")
		return exitUsage
	}
	if *minAUROC > 1 || *maxAnti > 1 {
		fmt.Fprintln(e.stderr, "validate: --min-auroc and --max-anti-share are fractions from 0 to 1 (-1: off)")
		return exitUsage
	}
	if !(*judgeError >= 0 && *judgeError < 0.5) {
		fmt.Fprintf(e.stderr, "validate: --judge-error %g: want a rate from 0 (the default) to below 0.5\n", *judgeError)
		return exitUsage
	}
	if *gateOn != "rate" && *gateOn != "lower" {
		fmt.Fprintf(e.stderr, "validate: --gate-on is rate or lower, not %q\n", *gateOn)
		return exitUsage
	}
	var anns []audit.Annotation
	if *human != "" {
		var err error
		if anns, err = readSheet(*human); err != nil {
			fmt.Fprintf(e.stderr, "validate: --human: %v\n", err)
			return exitUsage
		}
	}
	in, code, ok := openCorpus("validate", paths, e)
	if !ok {
		return code
	}
	opt := audit.Options{MaxItems: *maxItems, List: *list, Tool: "validate " + version, Human: anns, HumanSheet: *human, JudgeError: *judgeError}
	if *list == 0 {
		opt.List = -1
	}
	rep, err := audit.Audit(ctx, in, opt)
	if err != nil {
		fmt.Fprintf(e.stderr, "validate: %v\n", err)
		return exitFailed
	}
	write := rep.WriteText
	if *asJSON {
		write = rep.WriteJSON
	}
	if err := write(e.stdout); err != nil {
		fmt.Fprintf(e.stderr, "validate: writing the report: %v\n", err)
		return exitFailed
	}
	if !*asJSON {
		reviewSection(ctx, paths, e)
	}
	if *htmlPath != "" {
		if err := writeFile(*htmlPath, e.stdout, rep.WriteHTML); err != nil {
			fmt.Fprintf(e.stderr, "validate: %v\n", err)
			return exitFailed
		}
	}
	gate := audit.Gate{MinValidity: *minValidity, MaxViolations: *maxViolations, MinAUROC: fractionGate(*minAUROC), MaxAntiShare: fractionGate(*maxAnti), OnLower: *gateOn == "lower"}
	code = auditExit(rep, gate, e)
	if *human != "" && !sheetCompared(rep, *human, e) && code == exitOK {
		code = exitPartial
	}
	return code
}

// emptyWhy is what a run's report.json says of why its corpus is empty.
func emptyWhy(in *audit.RunInput) string {
	if in == nil {
		return ""
	}
	var stages []string
	for _, c := range in.LeftOutByStage {
		stages = append(stages, fmt.Sprintf("%s=%d", c.Stage, c.Units))
	}
	why := fmt.Sprintf("; its run (report.json): %d of %d %s left out", in.LeftOut, in.Unique, in.Units)
	if len(stages) > 0 {
		why += " (" + strings.Join(stages, " ") + ")"
	}
	why += fmt.Sprintf(", %d failed, %d pending", in.Failed, in.Pending)
	if in.Unique == 0 {
		why = fmt.Sprintf("; its run (report.json) read no usable %s (%d bad lines)", in.Units, in.BadLines)
	}
	return why + "; distill status RUN_DIR shows why"
}

// fractionGate is a fraction gate's threshold, nil when the flag is negative (off).
func fractionGate(x float64) *float64 {
	if x < 0 {
		return nil
	}
	return &x
}

// auditExit says on stderr why the audit does not exit 0, and returns the code.
func auditExit(rep *audit.Report, g audit.Gate, e env) int {
	if rep.Corpus.Records == 0 && len(rep.InputProblems) > 0 {
		fmt.Fprintf(e.stderr, "validate: no record could be read:\n  %s\n", problemLines(rep.InputProblems))
		return exitFailed
	}
	if rep.Corpus.Records == 0 {
		fmt.Fprintf(e.stderr, "validate: the corpus holds no records%s\n", emptyWhy(rep.RunInput))
		return exitFailed
	}
	if fails := rep.Failures(g); len(fails) > 0 {
		fmt.Fprintf(e.stderr, "validate: the corpus fails the gate:\n  %s\n", joinLines(fails))
		return exitFailed
	}
	if damage := rep.Damage(); len(damage) > 0 {
		fmt.Fprintf(e.stderr, "validate: the corpus is damaged:\n  %s\n", joinLines(damage))
		for _, p := range rep.InputProblems[:min(5, len(rep.InputProblems))] {
			fmt.Fprintf(e.stderr, "  %s\n", problemLine(p))
		}
		return exitPartial
	}
	return exitOK
}

// sheetCompared says on stderr, and returns false, when the --human sheet
// could not correct the rates: no row compared, or a corpus with no rubric
// items' validity (a grounded corpus).
func sheetCompared(rep *audit.Report, sheet string, e env) bool {
	why := rep.Reliability.NothingCompared()
	if rep.Reliability == nil {
		why = "the corpus has no rubric items' validity to correct (a grounded corpus)"
	}
	if why != "" {
		fmt.Fprintf(e.stderr, "validate: --human %s: %s; the rates are not corrected\n", sheet, why)
	}
	return why == ""
}

func problemLine(p audit.Problem) string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Error)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Error)
}

func problemLines(ps []audit.Problem) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = problemLine(p)
	}
	return joinLines(lines)
}
