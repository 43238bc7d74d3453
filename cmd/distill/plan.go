package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/plan"
)

const planUsage = `Usage: distill plan [--sample N] [--config job.yaml] [every flag of distill run]

Runs the job on a deterministic sample of its input (the N problems whose id
hash is lowest, spread over sources and input order; for --style grounded,
the N passages the documents are cut into) in --out and its cache,
so the real distill run pays nothing again for them; the sample is not part of
the job, so distill run afterwards takes the same run directory. From the
sample it projects for the whole input, per stage and in total, requests,
tokens, cost, records, validity and the wall time at the job's concurrency
and the endpoint's rate limits (configured, or announced in x-ratelimit-*
headers), each with a 95% range; names the constraint that sets the time and
what relaxing it buys; and checks the budget. The table goes to stdout and
plan.json beside report.json; distill status shows it. Planning again reuses
the pilot's figures (try another --concurrency or --rpm for free).

Examples:
  distill plan --config job.yaml --sample 100
  distill plan --config job.yaml --sample 200 --concurrency 512 --max-cost-usd 3000
  distill plan --style grounded --input docs/ --out runs/docs --base-url URL --model M --sample 100
  distill run --config job.yaml     # then: the sampled problems are already done

Flags:
`

func planCmd(args []string, stdout, stderr io.Writer) int {
	f := newRunFlags()
	f.fs.Init("distill plan", flag.ContinueOnError)
	sample := f.fs.Int("sample", 100, "problems (for --style grounded, passages) in the pilot, chosen by the hash of their id; e.g. 200")
	allowBad := f.fs.Bool("allow-bad-rows", false, "plan although the input has bad rows (distill run skips them); without it a plan refuses such an input")
	f.usage = func(w io.Writer) {
		fmt.Fprint(w, planUsage)
		f.fs.SetOutput(w)
		f.fs.PrintDefaults()
		fmt.Fprint(w, "\nExit codes: 0 ok, 1 the pilot failed (the run directory stays usable: distill run resumes it), 2 usage error or bad input, 3 the pilot made no record (the cause is the last line).\n")
	}
	if ok, code := parseFlags(f.fs, batchArgs(args), f.usage, stderr); !ok {
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "distill plan: unexpected argument %q (flags only)\nRun 'distill plan -h' to see every flag.\n", f.fs.Arg(0))
		return exitUsage
	}
	jb, ctx, stop, opt, ok := startJob("distill plan", f, stderr)
	if !ok {
		return exitUsage
	}
	defer stop()
	doc, err := plan.Run(ctx, jb, opt, plan.Options{Sample: *sample, AllowBadRows: *allowBad})
	stop()
	var ue *job.UsageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "distill plan: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "distill plan: %v\n", err)
		return exitFailed
	}
	plan.WriteText(stdout, doc, jb.Out)
	if why := plan.NoRecordReason(doc); why != "" {
		fmt.Fprintf(stderr, "distill plan: %s\n", why)
		return exitProblems
	}
	return exitOK
}
