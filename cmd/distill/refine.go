package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/plan"
	"github.com/rubricforge/rubricforge/refine"
)

const refineUsage = `Usage: distill refine SRC --out DST [flags]

Makes a new corpus DST from the corpus SRC by the discrimination its own
verified rollouts and satisfaction verdicts measure (no requests are sent); SRC
is not touched. SRC is anything validate reads: a run directory, a jsonl or verl
export, shard or data files. DST is a new run directory that status, validate,
export and rewardd read like any other.

Every record with a correct and a flawed judged rollout is refined (--min-side)
by rules decided on all its judged rollouts: an item is dropped when it is dead
or saturated within the judge's errors (--judge-error: good, or bad, on no more
rollouts of each side than those errors explain; --decompose splits saturated
items into finer ones, below), anti-discriminative (the one-sided Fisher test of
package discrim under Benjamini-Hochberg, or an edge below --min-edge), or the
weaker of a redundant pair (the two move together within the correct and within
the flawed rollouts). ANSWER items stay; the style's rules are kept (srar: a
SUGGEST item; factual_process: 3 items). The kept items are re-weighted:
max(edge, 0.05) / (1 + the positive within-label correlations with the other
kept items) (factual_process: integers 1-5).

What that gains is measured honestly, by cross-fitting (--folds): each fold's
rollouts are scored by the rubric the same rules leave when they decide on the
other folds, and a correct and a flawed rollout are compared only within a
fold. The figure is the AUROC of the reward each scheme pays (srar's type
budgets, which the new weights do not reach; rgr's, grounded's, rlcer's and
papo's weighted scores, which they do), the record's own scheme first, without
ANSWER items (the rubric's own signal) and with, before and after, with 95%
intervals from a bootstrap over records and rollouts; "raised" only when the
interval of the change lies above 0; the in-sample figures (what validate sees
in DST) beside them. Per record in DST/refine-records.jsonl, overall in
DST/refine.json and the output. --min-gain X refuses a refinement whose
interval's lower bound is below X. Records that cannot be refined (no
verdicts, one side only, grounded) are copied.

--decompose sends each saturated item of a refined record, with the rollouts
that meet it, to the distiller for 2-3 finer items; the validity judge judges
them and the satisfaction judge grades every rollout of the record on them; a
finer item is kept when it is valid and its edge is positive (then the
record is refined with it like any item). The distiller is shown rollouts of
one half of each record only (discrim.Split's fit half), and the record's
held-out figures are measured on the other half. These requests go through distill
run's engine, with its endpoint, limit, budget and batch flags (or --config's
job file): the response cache, the budget and batch mode are distill run's. The
decomposition runs in a hidden directory next to DST (.DST.refine-decompose)
that a killed or stopped refine leaves, so the same command resumes it without
paying twice; it ends up in DST/decompose, a run directory distill status reads.

--decompose --plan shows what the decomposition will cost before paying for
it, as distill plan does for distill run: it decides the records as the real
run does, runs the decomposition of a deterministic sample of the records to
decompose (--sample) in the hidden directory and its cache, and projects the
whole decomposition's requests, tokens, cost and time per stage. The plan is
written to plan.json in the decomposition's run directory (batch pricing and
distill status read it); DST is not written. The same command without --plan
then pays nothing again for the sampled records.

--from-stats DIR folds a training run's live statistics into DST instead (no
discrimination is measured): DIR is the --state-dir of the run's rewardd, where
it kept each problem's live rubric. The items the run retired (the policy met
them on nearly every response) are dropped, except ANSWER items and those the
style's rules need; the elicited criteria it admitted are added (a PROCESS
criterion as a SUGGEST item in an srar rubric); ids are renumbered. A record's
verdicts are kept when it only lost items and cleared when it gained some.
Records the run never scored, or scored with another rubric, are copied. A
problem two replicas kept is refused unless --skip-split. DST/from-stats.json
sums it up (validate reports it), DST/from-stats-records.jsonl gives each
changed record with the run's evidence.

DST is written in a hidden directory next to it and renamed at the end: a
refine that is killed leaves no DST, and the same command starts it over.
Running it again when DST holds the same refinement does nothing.

Examples:
  distill refine runs/demo --out runs/demo-refined
  distill refine runs/demo --out runs/demo-refined --dry-run
  distill refine exports/demo-jsonl --out runs/demo-refined --min-edge -0.1 --saturated95
  distill refine runs/demo --out runs/demo-refined --decompose --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B
  distill refine runs/demo --out runs/demo-refined --decompose --config job.yaml --max-cost-usd 5 --batch
  distill refine runs/demo --out runs/demo-refined --decompose --config job.yaml --plan --sample 20
  distill refine runs/demo --from-stats runs/demo-live --out runs/demo-v2

Flags:
`

// refineFlags are the flags of distill refine.
type refineFlags struct {
	fs                          *flag.FlagSet
	out                         *string
	dryRun, saturated95, asJSON *bool
	minEdge, antiAlpha          *float64
	judgeError, minGain         *float64
	shardRows, minSide, folds   *int
	decompose, plan             *bool
	sample                      *int
	config                      *string
	job                         *flagSet // distill run's flags for --decompose's requests
	jobNames                    map[string]bool
	fromStats                   *string // --from-stats (refine_stats.go)
	skipSplit                   *bool
}

func newRefineFlags() *refineFlags {
	fs := flag.NewFlagSet("distill refine", flag.ContinueOnError)
	d := refine.DefaultOptions()
	jf := &flagSet{fs: fs}
	jd := job.DefaultJob()
	jf.endpointFlags(jd)
	jf.requestFlags(jd)
	jf.batchFlags()
	jobNames := map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) { jobNames[fl.Name] = true })
	return &refineFlags{
		job: jf, jobNames: jobNames,
		decompose:   fs.Bool("decompose", false, "split saturated items into 2-3 finer ones with the distiller, judged and measured by the judges (requests: needs --base-url and --model, or --config); e.g. --decompose --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B"),
		config:      fs.String("config", "", "with --decompose: a job file whose endpoints, models, prices, limits, budget and batch settings its requests use (its input, output and style are refine's); flags override it; e.g. --config examples/demo.yaml"),
		fs:          fs,
		out:         fs.String("out", "", "the refined corpus, a new run directory (required; not inside SRC); e.g. --out runs/demo-refined"),
		dryRun:      fs.Bool("dry-run", false, "print what would change, a line per record, and the summary; write nothing"),
		minEdge:     fs.Float64("min-edge", d.MinEdge, "drop items whose edge is below this, besides those the Fisher test calls anti-discriminative; e.g. --min-edge -0.1"),
		saturated95: fs.Bool("saturated95", false, "drop as saturated the items good on >= 95% of the rollouts too (default: those bad on no more rollouts of each side than the judge's errors explain)"),
		antiAlpha:   fs.Float64("anti-alpha", 0, "false-discovery rate (Benjamini-Hochberg over a record's items) of the one-sided Fisher test that calls a negative edge anti-discriminative (0: 0.05); e.g. --anti-alpha 0.01"),
		minSide:     fs.Int("min-side", d.MinSide, "refine only records with at least this many correct and this many flawed judged rollouts; the others are copied unchanged; e.g. --min-side 3"),
		folds:       fs.Int("folds", d.Folds, "folds the held-out figures are cross-fitted on (at least 2); e.g. --folds 8"),
		judgeError:  fs.Float64("judge-error", 0, "the satisfaction judge's error rate the rules tolerate, e.g. as measured against people's labels (0: the rate the corpus's judge panels measure, else 0.05); e.g. --judge-error 0.08"),
		minGain:     fs.Float64("min-gain", 0, "refuse the refinement (exit 1, nothing written) when the 95% interval of the held-out change of the rubric's own signal (without ANSWER items) has a lower bound below this; off unless given; e.g. --min-gain 0"),
		shardRows:   fs.Int("shard-rows", 0, "records per shard of the refined corpus, each shard held in memory until written (0: as many as the source run's largest shard, else 1000); e.g. --shard-rows 500"),
		asJSON:      fs.Bool("json", false, "print the summary (refine.json) as JSON instead of text"),
		plan:        fs.Bool("plan", false, "with --decompose: run the decomposition of a sample of the records (--sample) and project the whole decomposition's requests, tokens, cost and time, writing nothing to DST; e.g. --decompose --plan --sample 20"),
		sample:      fs.Int("sample", 100, "with --plan: records to decompose in the pilot, chosen by the hash of their id; e.g. --sample 20"),
		fromStats:   fs.String("from-stats", "", "fold a training run's live statistics into DST instead: rewardd's --state-dir of the run, whose retired items are dropped (not ANSWER items) and admitted criteria added (docs/training-loops.md); e.g. --from-stats runs/math16k-live"),
		skipSplit:   fs.Bool("skip-split", false, "with --from-stats: leave unchanged the problems two replicas kept, instead of refusing the state directory"),
	}
}

func (f *refineFlags) usage(w io.Writer) {
	fmt.Fprint(w, refineUsage)
	f.fs.SetOutput(w)
	f.fs.PrintDefaults()
	fmt.Fprint(w, "\nExit codes: 0 ok (also when the held-out AUROC did not rise: the output says so), 1 failed (unreadable corpus, disk error, a fatal endpoint error, or the refinement fails --min-gain; no DST is left), 2 usage error (no such SRC, --out missing, inside SRC or existing, a corpus without satisfaction verdicts, --decompose without an endpoint, --plan without --decompose), 4 stopped (Ctrl-C, or --decompose's budget reached or batch files to run: no DST is left; run the same command again, with a higher budget, to resume).\n")
}

func refineCmd(args []string, stdout, stderr io.Writer) int {
	f := newRefineFlags()
	srcs, ok, code := parseDirsAndFlags(f.fs, batchArgs(args), f.usage, stderr, "distill refine SRC --out DST")
	if !ok {
		return code
	}
	if len(srcs) != 1 {
		fmt.Fprintf(stderr, "distill refine: want one SRC, got %d (see -h)\n", len(srcs))
		return exitUsage
	}
	if *f.out == "" && !*f.dryRun {
		fmt.Fprintln(stderr, "distill refine: --out is required (a new run directory; see -h)")
		return exitUsage
	}
	if *f.minSide < 1 {
		fmt.Fprintln(stderr, "distill refine: --min-side must be at least 1")
		return exitUsage
	}
	if *f.shardRows < 0 {
		fmt.Fprintln(stderr, "distill refine: --shard-rows must be 0 (the source's) or more")
		return exitUsage
	}
	if *f.fromStats != "" || *f.skipSplit {
		return f.fromStatsCmd(srcs[0], stdout, stderr)
	}
	if code, ok := f.checkStatFlags(stderr); !ok {
		return code
	}
	cfg := refine.Config{
		Src: srcs[0], Out: *f.out, DryRun: *f.dryRun, DryRunTo: stdout,
		Options: refine.Options{MinEdge: *f.minEdge, Saturated95: *f.saturated95, AntiAlpha: *f.antiAlpha, MinSide: *f.minSide,
			Folds: *f.folds, JudgeError: *f.judgeError},
		ShardRows: *f.shardRows, ToolVersion: toolVersion(), Logger: slog.New(slog.NewTextHandler(stderr, nil)),
	}
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "min-gain" {
			cfg.MinGain = f.minGain
		}
	})
	if code, ok := f.decomposeConfig(&cfg, stderr); !ok {
		return code
	}
	if code, ok := f.checkPlanFlags(stderr); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *f.plan {
		return refinePlan(ctx, cfg, *f.sample, stdout, stderr)
	}
	sum, err := refine.Run(ctx, cfg)
	var stopErr *refine.StopError
	var gateErr *refine.GateError
	switch {
	case errors.As(err, &gateErr):
		if sum != nil && !sum.AlreadyDone && !*f.asJSON {
			sum.WriteText(stdout, cfg.Src, cfg.Out)
		}
		what := "was not written"
		if sum != nil && sum.AlreadyDone {
			what = "is left as it was"
		}
		fmt.Fprintf(stderr, "distill refine: the refinement fails the gate: %v; %s %s\n", err, cfg.Out, what)
		return exitFailed
	case errors.As(err, &stopErr):
		fmt.Fprintf(stderr, "distill refine: %v; %s was not written\n", err, cfg.Out)
		if stopErr.StoppedBy == pipeline.StopBudget {
			fmt.Fprintln(stderr, "The budget counts every session of the decomposition: raise --max-cost-usd or --max-total-tokens and run the same command again to resume.")
		}
		return exitStopped
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "distill refine: stopped; %s was not written\n", cfg.Out)
		return exitStopped
	case err != nil && refine.IsUsage(err):
		fmt.Fprintf(stderr, "distill refine: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "distill refine: %v\n", err)
		return exitFailed
	}
	if *f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			fmt.Fprintf(stderr, "distill refine: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	sum.WriteText(stdout, cfg.Src, cfg.Out)
	return exitOK
}

// checkStatFlags refuses --folds below 2 and a --judge-error that is not a
// rate below 0.5.
func (f *refineFlags) checkStatFlags(stderr io.Writer) (int, bool) {
	switch {
	case *f.folds < 2:
		fmt.Fprintf(stderr, "distill refine: --folds %d: want at least 2 (see -h)\n", *f.folds)
	case !(*f.judgeError >= 0 && *f.judgeError < 0.5):
		fmt.Fprintf(stderr, "distill refine: --judge-error %g: want a rate from 0 (measured or the default) to below 0.5 (see -h)\n", *f.judgeError)
	default:
		return exitOK, true
	}
	return exitUsage, false
}

// decomposeConfig sets cfg.Decompose from --decompose, --config and distill
// run's endpoint, limit, budget and batch flags; those flags without
// --decompose are a usage error. ok is false when the command must end
// with code.
func (f *refineFlags) decomposeConfig(cfg *refine.Config, stderr io.Writer) (int, bool) {
	if !*f.decompose {
		var set []string
		f.fs.Visit(func(fl *flag.Flag) {
			if f.jobNames[fl.Name] {
				set = append(set, "--"+fl.Name)
			}
		})
		if *f.config != "" || len(set) > 0 {
			fmt.Fprintf(stderr, "distill refine: %s: these flags apply only to --decompose's requests; add --decompose or leave them out\n", strings.Join(append(set, configFlag(*f.config)...), ", "))
			return exitUsage, false
		}
		return exitOK, true
	}
	jb := job.DefaultJob()
	if *f.config != "" {
		var err error
		if jb, err = job.LoadJobFile(*f.config); err != nil {
			fmt.Fprintf(stderr, "distill refine: --config: %v\n", err)
			return exitUsage, false
		}
	}
	for _, apply := range f.job.apply {
		apply(&jb)
	}
	cfg.Decompose = &refine.Decompose{Job: jb, Pipeline: pipeline.Options{
		ToolVersion: toolVersion(), Logger: cfg.Logger, Status: stderr,
	}}
	return exitOK, true
}

// checkPlanFlags refuses --plan without --decompose or with --dry-run,
// and --sample without --plan.
func (f *refineFlags) checkPlanFlags(stderr io.Writer) (int, bool) {
	sampleSet := false
	f.fs.Visit(func(fl *flag.Flag) { sampleSet = sampleSet || fl.Name == "sample" })
	var problem string
	switch {
	case *f.plan && !*f.decompose:
		problem = "--plan projects --decompose's requests; add --decompose (a refine without it sends none)"
	case *f.plan && *f.dryRun:
		problem = "--plan and --dry-run: give one (--plan sends the pilot's requests; --dry-run sends nothing)"
	case sampleSet && !*f.plan:
		problem = "--sample applies only to --plan"
	case *f.plan && *f.sample < 1:
		problem = fmt.Sprintf("--sample %d: want at least 1 record", *f.sample)
	default:
		return exitOK, true
	}
	fmt.Fprintf(stderr, "distill refine: %s (see -h)\n", problem)
	return exitUsage, false
}

// refinePlan is --decompose --plan: the pilot and the projection of the
// decomposition, printed as distill plan prints a job's.
func refinePlan(ctx context.Context, cfg refine.Config, sample int, stdout, stderr io.Writer) int {
	doc, dir, err := refine.Plan(ctx, cfg, plan.Options{Sample: sample})
	switch {
	case errors.Is(err, refine.ErrNothingToDecompose):
		fmt.Fprintf(stdout, "plan: %v\n", err)
		return exitOK
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "distill refine: the plan's pilot was stopped; the same command resumes it")
		return exitStopped
	case err != nil && refine.IsUsage(err):
		fmt.Fprintf(stderr, "distill refine: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "distill refine: %v\n", err)
		return exitFailed
	}
	plan.WriteText(stdout, doc, dir)
	fmt.Fprintf(stdout, "the same command without --plan decomposes every record and writes %s; the sampled records are not paid again\n", cfg.Out)
	return exitOK
}

func configFlag(path string) []string {
	if path == "" {
		return nil
	}
	return []string{"--config"}
}
