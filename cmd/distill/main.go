// Command distill builds rubric corpora for rubric-reward RL: it samples
// rollouts from an OpenAI-compatible endpoint, verifies them, distills and
// judges rubric items, and writes resumable Parquet shards.
//
// Exit codes: 0 ok; 1 failed; 2 usage error; 3 finished with some problems
// failed; 4 stopped before finishing (budget reached or interrupted), run the
// same command again to resume.
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
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/rubricforge/rubricforge/pipeline"
)

const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitProblems = 3
	exitStopped  = 4
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `distill builds rubric corpora for rubric-reward RL.

Usage:
  distill run    [flags]   build or resume a corpus (see distill run -h)
  distill status RUN_DIR   what a run directory holds: done, failed, cost, ETA
  distill verify [FILE]    compare gold and predicted answers, or extract answers, over JSON lines
  distill version          print the version

Exit codes: 0 ok, 1 failed, 2 usage error, 3 finished with some problems failed,
4 stopped before finishing (budget reached or interrupted; run again to resume).
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "status":
		return statusCmd(args[1:], stdout, stderr)
	case "verify":
		return verifyCmd(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "distill", pipeline.ToolVersion)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "distill: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

const runUsage = `Usage: distill run [--config job.yaml] [flags]

Builds or resumes the corpus in --out. Flags override the job file. Running the
same command again resumes: finished problems are skipped and answered requests
come from the run's cache, so nothing is paid for twice.

Examples:
  distill run --config examples/demo.yaml
  distill run --input problems.jsonl --out runs/math16k \
      --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B --style srar --n 8 --concurrency 512
  OPENAI_API_KEY=... distill run --config job.yaml --judge-base-url https://api.openai.com/v1 --judge-model gpt-4.1-mini

Flags:
`

// flagSet is the run command's flags, applied over the job file.
type flagSet struct {
	fs                        *flag.FlagSet
	config                    *string
	force, retryFailed, quiet *bool
	logLevel                  *string
	apply                     []func(job *pipeline.Job)
}

func newRunFlags(stderr io.Writer) *flagSet {
	fs := flag.NewFlagSet("distill run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &flagSet{fs: fs}
	f.config = fs.String("config", "", "job file (YAML); e.g. examples/demo.yaml")
	f.force = fs.Bool("force", false, "resume even though the job differs from the one that made --out")
	f.retryFailed = fs.Bool("retry-failed", false, "retry the problems recorded in failures.jsonl")
	f.quiet = fs.Bool("quiet", false, "no progress output")
	f.logLevel = fs.String("log-level", "info", "log level: debug, info, warn, error")

	str := func(name, def, help string, set func(j *pipeline.Job, v string)) {
		bind(f, name, fs.String(name, def, help), set)
	}
	integer := func(name string, def int, help string, set func(j *pipeline.Job, v int)) {
		bind(f, name, fs.Int(name, def, help), set)
	}
	float := func(name string, def float64, help string, set func(j *pipeline.Job, v float64)) {
		bind(f, name, fs.Float64(name, def, help), set)
	}
	boolean := func(name string, def bool, help string, set func(j *pipeline.Job, v bool)) {
		bind(f, name, fs.Bool(name, def, help), set)
	}
	duration := func(name string, def time.Duration, help string, set func(j *pipeline.Job, v time.Duration)) {
		bind(f, name, fs.Duration(name, def, help), set)
	}
	int64Flag := func(name string, def int64, help string, set func(j *pipeline.Job, v int64)) {
		bind(f, name, fs.Int64(name, def, help), set)
	}
	d := pipeline.DefaultJob()

	str("input", "", "input file(s), JSONL or Parquet, comma-separated; e.g. examples/problems.jsonl", func(j *pipeline.Job, v string) { j.Input.Paths = splitList(v) })
	str("input-format", d.Input.Format, "auto (by extension), jsonl or parquet", func(j *pipeline.Job, v string) { j.Input.Format = v })
	str("field-problem", d.Input.Fields.Problem, "input field holding the problem text", func(j *pipeline.Job, v string) { j.Input.Fields.Problem = v })
	str("field-answer", d.Input.Fields.Answer, "input field holding the ground-truth answer", func(j *pipeline.Job, v string) { j.Input.Fields.Answer = v })
	str("field-id", d.Input.Fields.ID, "optional input field holding the problem id (empty: always hash problem and answer)", func(j *pipeline.Job, v string) { j.Input.Fields.ID = v })
	str("field-source", d.Input.Fields.Source, "optional input field holding the source name", func(j *pipeline.Job, v string) { j.Input.Fields.Source = v })
	str("field-reference", d.Input.Fields.Reference, "optional input field holding a reference solution", func(j *pipeline.Job, v string) { j.Input.Fields.Reference = v })
	str("source", "", "source name for rows without one; e.g. dapo-math", func(j *pipeline.Job, v string) { j.Input.Source = v })
	str("out", "", "run directory (created if missing); e.g. runs/math16k", func(j *pipeline.Job, v string) { j.Out = v })
	str("style", d.Style, "rubric style: srar (SUGGEST/PITFALL/BONUS/ANSWER) or factual_process (weighted criteria)", func(j *pipeline.Job, v string) { j.Style = v })

	str("base-url", "", "OpenAI-compatible endpoint including /v1, for every stage unless overridden; e.g. http://127.0.0.1:8000/v1", func(j *pipeline.Job, v string) { j.Rollout.BaseURL = v })
	str("model", "", "model for every stage unless overridden; e.g. Qwen/Qwen3-32B", func(j *pipeline.Job, v string) { j.Rollout.Model = v })
	boolean("legacy-max-tokens", false, "send the token limit as max_tokens instead of max_completion_tokens (older vLLM or SGLang)", func(j *pipeline.Job, v bool) { j.Rollout.LegacyMaxTokens = v })
	str("api-key-env", d.Rollout.APIKeyEnv, "environment variable holding the API key (empty or unset: no key sent)", func(j *pipeline.Job, v string) { j.Rollout.APIKeyEnv = v })
	for _, st := range []struct {
		name string
		ep   func(j *pipeline.Job) *pipeline.Endpoint
	}{
		{"distill", func(j *pipeline.Job) *pipeline.Endpoint { return &j.Distill.Endpoint }},
		{"judge", func(j *pipeline.Job) *pipeline.Endpoint { return &j.Judge.Endpoint }},
		{"empirical", func(j *pipeline.Job) *pipeline.Endpoint { return &j.Empirical.Endpoint }},
	} {
		str(st.name+"-base-url", "", "endpoint for the "+st.name+" stage (default: --base-url)", func(j *pipeline.Job, v string) { st.ep(j).BaseURL = v })
		str(st.name+"-model", "", "model for the "+st.name+" stage (default: --model)", func(j *pipeline.Job, v string) { st.ep(j).Model = v })
		str(st.name+"-api-key-env", "", "API key variable for the "+st.name+" stage (default: --api-key-env)", func(j *pipeline.Job, v string) { st.ep(j).APIKeyEnv = v })
	}

	integer("n", d.Rollout.N, "rollouts per problem", func(j *pipeline.Job, v int) { j.Rollout.N = v })
	integer("per-request", d.Rollout.PerRequest, "samples per request (the n parameter); 1 lets a larger --n reuse cached rollouts", func(j *pipeline.Job, v int) { j.Rollout.PerRequest = v })
	float("temperature", *d.Rollout.Temperature, "rollout sampling temperature", func(j *pipeline.Job, v float64) { j.Rollout.Temperature = &v })
	integer("max-tokens", 0, "rollout max completion tokens (0: server default); e.g. 16384", func(j *pipeline.Job, v int) { j.Rollout.MaxTokens = v })
	int64Flag("seed", 0, "base seed; sample i is sent seed+i", func(j *pipeline.Job, v int64) { j.Rollout.Seed = v })
	integer("min-correct", d.Selection.MinCorrect, "distill only problems with at least this many correct rollouts", func(j *pipeline.Job, v int) { j.Selection.MinCorrect = v })
	integer("min-incorrect", d.Selection.MinIncorrect, "distill only problems with at least this many flawed rollouts", func(j *pipeline.Job, v int) { j.Selection.MinIncorrect = v })
	integer("max-items", d.Distill.MaxItems, "most rubric items per problem", func(j *pipeline.Job, v int) { j.Distill.MaxItems = v })
	boolean("judge", d.Judge.Enabled, "run the validity judge over every item (--judge=false to skip)", func(j *pipeline.Job, v bool) { j.Judge.Enabled = v })
	str("judge-mode", d.Judge.Mode, "batch (one judge call per problem) or item (one per item)", func(j *pipeline.Job, v string) { j.Judge.Mode = v })
	boolean("drop-invalid", d.Judge.DropInvalid, "drop items the judge finds invalid", func(j *pipeline.Job, v bool) { j.Judge.DropInvalid = v })
	boolean("empirical", d.Empirical.Enabled, "judge every rollout against the rubric and store each item's empirical validity", func(j *pipeline.Job, v bool) { j.Empirical.Enabled = v })
	float("alpha", d.Empirical.Alpha, "empirical validity threshold: an item is valid when corr > alpha and its satisfaction varies", func(j *pipeline.Job, v float64) { j.Empirical.Alpha = v })

	integer("concurrency", d.Limits.Concurrency, "requests in flight per endpoint; e.g. 512 for a vLLM server", func(j *pipeline.Job, v int) { j.Limits.Concurrency = v })
	integer("problems-in-flight", 0, "problems processed at once (default: --concurrency)", func(j *pipeline.Job, v int) { j.Limits.ProblemsInFlight = v })
	float("rpm", 0, "requests per minute per endpoint (0: no limit)", func(j *pipeline.Job, v float64) { j.Limits.RequestsPerMinute = v })
	float("tpm", 0, "tokens per minute per endpoint (0: no limit)", func(j *pipeline.Job, v float64) { j.Limits.TokensPerMinute = v })
	duration("attempt-timeout", d.Limits.AttemptTimeout, "deadline of one request attempt", func(j *pipeline.Job, v time.Duration) { j.Limits.AttemptTimeout = v })
	integer("max-attempts", d.Limits.MaxAttempts, "attempts per request for retryable errors (429, 5xx, timeouts)", func(j *pipeline.Job, v int) { j.Limits.MaxAttempts = v })
	float("max-cost-usd", 0, "stop cleanly (resumable) once this much is spent; needs prices in the job file", func(j *pipeline.Job, v float64) { j.Budget.MaxCostUSD = v })
	int64Flag("max-total-tokens", 0, "stop cleanly (resumable) once this many tokens are spent", func(j *pipeline.Job, v int64) { j.Budget.MaxTokens = v })
	integer("shard-rows", d.Output.ShardRows, "records per Parquet shard", func(j *pipeline.Job, v int) { j.Output.ShardRows = v })
	duration("checkpoint-interval", d.Output.CheckpointInterval, "commit finished records and report.json this often", func(j *pipeline.Job, v time.Duration) { j.Output.CheckpointInterval = v })
	str("cache", "", "response cache file (default RUN/cache.db); another run's cache lets this run reuse its answered requests, e.g. runs/n8/cache.db", func(j *pipeline.Job, v string) { j.Cache = v })
	str("prompts-dir", "", "directory whose NAME.tmpl files replace the embedded prompt templates", func(j *pipeline.Job, v string) { j.PromptsDir = v })

	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nExit codes: 0 ok, 1 failed, 2 usage error, 3 finished with some problems failed, 4 stopped (budget or interrupt; run again to resume).\n")
	}
	return f
}

// bind applies a flag's value to the job only when the flag was given, so
// the job file's value stands otherwise.
func bind[T any](f *flagSet, name string, v *T, set func(j *pipeline.Job, v T)) {
	f.apply = append(f.apply, func(j *pipeline.Job) {
		if isSet(f.fs, name) {
			set(j, *v)
		}
	})
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runCmd(args []string, stdout, stderr io.Writer) int {
	f := newRunFlags(stderr)
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "distill run: unexpected argument %q (flags only; see -h)\n", f.fs.Arg(0))
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "distill run: --log-level: %v\n", err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	job := pipeline.DefaultJob()
	if *f.config != "" {
		var err error
		if job, err = pipeline.LoadJobFile(*f.config); err != nil {
			fmt.Fprintf(stderr, "distill run: %v\n", err)
			return exitUsage
		}
	}
	for _, apply := range f.apply {
		apply(&job)
	}
	job.Normalize()
	if err := job.Validate(); err != nil {
		fmt.Fprintf(stderr, "distill run: the job is not usable:\n%s\n", indent(err.Error()))
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
		if !*f.quiet {
			fmt.Fprintln(stderr, "distill: stopping; finished work is being written (Ctrl-C again to abort)")
		}
	}()

	opt := pipeline.Options{Force: *f.force, RetryFailed: *f.retryFailed, Logger: log}
	if !*f.quiet {
		opt.Status = stderr
		if fd, ok := stderr.(interface{ Fd() uintptr }); ok {
			opt.Terminal = term.IsTerminal(int(fd.Fd()))
		}
	}
	rep, err := pipeline.Run(ctx, job, opt)
	if rep != nil {
		rep.WriteSummary(stdout, job.Out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "distill run: %v\n", err)
		return exitFailed
	}
	switch {
	case rep.Status == pipeline.StatusStopped:
		fmt.Fprintf(stderr, "distill run: stopped (%s); run the same command again to resume\n", rep.StopReason)
		return exitStopped
	case rep.Problems.Failed > 0:
		return exitProblems
	}
	return exitOK
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

func statusCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print report.json and the manifest summary as JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: distill status [--json] RUN_DIR\n\nWhat a run directory holds: done, failed, cost, ETA.\n\nExample:\n  distill status runs/demo\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	st, err := pipeline.ReadStatus(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "distill status: %v\n", err)
		return exitFailed
	}
	if *asJSON {
		if err := st.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "distill status: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	st.WriteText(stdout)
	return exitOK
}
