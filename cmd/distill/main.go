// Command distill builds rubric corpora for rubric-reward RL: it samples
// rollouts from an OpenAI-compatible endpoint, verifies them, distills and
// judges rubric items, and writes resumable Parquet shards.
//
// Exit codes: 0 ok; 1 failed; 2 usage error; 3 finished with some problems
// failed, a stage that judged nothing (an empirical stage with no verdict)
// or an empty corpus (the cause is the last line); 4 stopped before finishing (interrupted: run the same command again
// to resume; budget reached: raise the budget, which counts every session of
// the run, and run again; batch files written with --batch-files: run them,
// then run again; the run's batches cancelled: run again to ask the rest).
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
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/rubricforge/rubricforge/internal/buildinfo"
	"github.com/rubricforge/rubricforge/internal/errwriter"
	"github.com/rubricforge/rubricforge/internal/outpath"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
)

const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitProblems = 3
	exitStopped  = 4
)

// version overrides the version the build information gives (the module
// version go build derives from the VCS, else the revision), when set at
// build time with -ldflags "-X main.version=v1.2.3" (the Makefile does).
var version = ""

// toolVersion is the version records' provenance and the manifest keep.
func toolVersion() string { return buildinfo.Version(version) }

func main() {
	stdout := errwriter.New(os.Stdout) // a failed write to it fails the command
	os.Exit(stdout.ExitCode(run(os.Args[1:], stdout, os.Stderr), "distill", os.Stderr))
}

const usage = `distill builds rubric corpora for rubric-reward RL.

Usage:
  distill run    [flags]   build or resume a corpus (see distill run -h)
  distill plan --sample N [flags]   run a sample, project the whole job's requests, tokens, cost and time (see distill plan -h)
  distill status RUN_DIR...   what run directories hold: done, failed, cost, ETA (several: one table)
  distill batches list|cancel RUN_DIR   a batch-mode run's provider batches: list them, or cancel the open ones (see distill batches -h)
  distill merge RUN_DIR... --out DIR   merge the workers of a --partition job into one corpus (see distill merge -h)
  distill compact RUN_DIR  merge a run's small shards and drop its cache's dead entries
  distill cache compact RUN_DIR   drop the response cache's dead entries only
  distill repair RUN_DIR   move damaged shards aside so the next run makes their records again
  distill export RUN_DIR   write the corpus as a trainer dataset: verl, rar, srar-lines, jsonl (see distill export -h)
  distill refine SRC --out DST   a new corpus from SRC by measured discrimination: drop, re-weight items (see distill refine -h)
  distill verify [FILE]    compare gold and predicted answers, or extract answers, over JSON lines
  distill version          print the version, the VCS revision and time it was built from

Exit codes: 0 ok, 1 failed, 2 usage error, 3 finished with some problems failed
(or a stage that judged nothing, named in the summary, or an empty corpus: the cause is the last line), 4 stopped before finishing (interrupted: run again to resume; budget reached:
raise the budget, which counts every session of the run; batch files written:
run them, then run again; batches cancelled: run again to ask the rest).
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "plan":
		return planCmd(args[1:], stdout, stderr)
	case "status":
		return statusCmd(args[1:], stdout, stderr)
	case "merge":
		return mergeCmd(args[1:], stdout, stderr)
	case "batches":
		return batchesCmd(args[1:], stdout, stderr)
	case "cache":
		return cacheCmd(args[1:], stdout, stderr)
	case "compact":
		return compactCmd(args[1:], stdout, stderr)
	case "repair":
		return repairCmd(args[1:], stdout, stderr)
	case "export":
		return exportCmd(args[1:], stdout, stderr)
	case "verify":
		return verifyCmd(args[1:], stdout, stderr)
	case "refine":
		return refineCmd(args[1:], stdout, stderr)
	case "version", "--version":
		if len(args) > 1 && isHelp(args[1]) {
			fmt.Fprint(stderr, versionUsage)
			return exitOK
		}
		fmt.Fprintln(stdout, "distill", buildinfo.Read(version))
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
  distill run --style grounded --input docs/ --out runs/docs --base-url URL --model M --concurrency 256
  distill run --style grounded --input docs.jsonl.zst --field-text body --field-id doc_id --out runs/docs ...
  distill run --config job.yaml --batch                 # every stage whose endpoint has a Batch API, at half price
  distill run --config job.yaml --batch distill,judge   # rollouts online (a local vLLM), distill and judge in batches
  distill run --config job.yaml --batch-files runs/x/offline   # write batch files for vLLM's run-batch; run again to import
  distill run --config examples/demo-panel.yaml --base-url URL  # a panel of judges per stage (the job file's judge.panel)

Judge panels and judge order are job-file settings (docs/judge-panels.md):
  judge:
    order: shuffled        # or rubric; a judge shown several items sees them shuffled per judge and record
    order_seed: 0          # the seed of those orders, stored in every record
    layout: cache          # or paper (the seeds' order); cache puts the response last for the prefix cache (docs/caching.md)
    panel:                 # every item judged by each judge; a strict majority, a failed judge voting against
      - {name: small, model: Qwen/Qwen3-8B}                      # at the stage's endpoint
      - {name: large, model: gpt-4.1-mini, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}
  empirical:
    panel: [...]           # every rollout judged by each judge, the same way
    max_response_tokens: 16384   # a longer rollout is shown head and tail, its pitfalls counted (-1: whole)

Flags:
`

// flagSet is the run command's flags, applied over the job file.
type flagSet struct {
	fs                        *flag.FlagSet
	usage                     func(io.Writer)
	config                    *string
	force, retryFailed, quiet *bool
	logLevel                  *string
	cpuProfile, memProfile    *string
	apply                     []func(job *job.Job)
}

func newRunFlags() *flagSet {
	fs := flag.NewFlagSet("distill run", flag.ContinueOnError)
	f := &flagSet{fs: fs}
	f.config = fs.String("config", "", "job file (YAML); e.g. examples/demo.yaml")
	f.force = fs.Bool("force", false, "resume even though the job differs from the one that made --out")
	f.retryFailed = fs.Bool("retry-failed", false, "retry the problems recorded in failures.jsonl; in batch mode, also forget how many batches each request failed in (max_row_attempts), so those requests go into batches again")
	f.quiet = fs.Bool("quiet", false, "no progress output")
	f.logLevel = fs.String("log-level", "info", "log level: debug, info, warn, error")
	f.cpuProfile = fs.String("cpuprofile", "", "write a CPU profile of the run to this file, for go tool pprof; e.g. cpu.pprof")
	f.memProfile = fs.String("memprofile", "", "write a memory profile (allocations, and what is in use at the end) to this file, for go tool pprof; e.g. mem.pprof")

	d := job.DefaultJob()
	f.inputFlags(d)
	f.endpointFlags(d)
	f.stageFlags(d)
	f.limitFlags(d)
	f.batchFlags()

	f.usage = func(w io.Writer) {
		fmt.Fprint(w, runUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fmt.Fprint(w, "\nPaths in a job file are relative to the job file; paths in flags to the current directory.\n")
		fmt.Fprint(w, "Exit codes: 0 ok, 1 failed, 2 usage error, 3 finished with some problems failed (or a stage that judged nothing, named in the summary, or an empty corpus: every problem left out or failed, the cause in the last line), 4 stopped (interrupted: run again to resume; budget reached: raise it, it counts every session of the run; batch_files: run the files written to --batch-files, then run again; batch_cancelled: run again to ask the rest).\n")
	}
	return f
}

// inputFlags binds the flags of the input, the output and the style.
func (f *flagSet) inputFlags(d job.Job) {
	f.str("input", "", "input file(s), JSONL or Parquet, comma-separated; the grounded style also reads directories of .txt/.md documents; e.g. examples/problems.jsonl or docs/", func(j *job.Job, v string) { j.Input.Paths = splitList(v) })
	f.str("input-format", d.Input.Format, "auto (by extension), jsonl or parquet", func(j *job.Job, v string) { j.Input.Format = v })
	f.str("field-problem", d.Input.Fields.Problem, "input field holding the problem text", func(j *job.Job, v string) { j.Input.Fields.Problem = v })
	f.str("field-answer", d.Input.Fields.Answer, "input field holding the ground-truth answer", func(j *job.Job, v string) { j.Input.Fields.Answer = v })
	f.str("field-id", d.Input.Fields.ID, "optional input field holding the problem id (empty: always hash problem and answer)", func(j *job.Job, v string) { j.Input.Fields.ID = v })
	f.str("field-source", d.Input.Fields.Source, "optional input field holding the source name", func(j *job.Job, v string) { j.Input.Fields.Source = v })
	f.str("field-reference", d.Input.Fields.Reference, "optional input field holding a reference solution", func(j *job.Job, v string) { j.Input.Fields.Reference = v })
	f.str("field-text", d.Input.Fields.Text, "grounded style: input field holding a document's text; e.g. body", func(j *job.Job, v string) { j.Input.Fields.Text = v })
	f.str("field-title", d.Input.Fields.Title, "grounded style: optional input field holding a document's title", func(j *job.Job, v string) { j.Input.Fields.Title = v })
	f.integer("passage-chars", d.Grounded.PassageChars, "grounded style: most characters of a passage; longer documents are cut before headings, else between blocks, else at sentence ends; e.g. 4000", func(j *job.Job, v int) { j.Grounded.PassageChars = v })
	f.integer("min-passage-chars", d.Grounded.MinPassageChars, "grounded style: fewest characters of a passage (at most half of --passage-chars counts); a shorter one is merged into a neighbour where it fits, else left out without a request; 0 keeps all; e.g. 300", func(j *job.Job, v int) { j.Grounded.MinPassageChars = v })
	f.integer("questions-per-passage", d.Grounded.QuestionsPerPassage, "grounded style: question-rubric tuples synthesized per passage (K); e.g. 2", func(j *job.Job, v int) { j.Grounded.QuestionsPerPassage = v })
	f.boolean("enrich", d.Grounded.Enrich, "grounded style: enrich every criterion (verification method, keywords, concepts) with the document's analysis in view, in one more request per question (--enrich=false to skip)", func(j *job.Job, v bool) { j.Grounded.Enrich = v })
	f.str("source", "", "source name for rows without one; e.g. dapo-math", func(j *job.Job, v string) { j.Input.Source = v })
	f.str("out", "", "run directory (created if missing); e.g. runs/math16k", func(j *job.Job, v string) { j.Out = v })
	f.str("partition", "", "I/K: run only the problems of partition I of K (0 <= I < K), those whose id hashes to I mod K; one worker per partition, each with its own --out, then distill merge; e.g. 3/16", func(j *job.Job, v string) { j.Partition = v })
	f.str("style", d.Style, "rubric style: srar (SUGGEST/PITFALL/BONUS/ANSWER), factual_process (weighted criteria) or grounded (documents into questions with passage-grounded criteria)", func(j *job.Job, v string) { j.Style = v })
}

// endpointFlags binds the flags of the endpoints and models of the stages.
func (f *flagSet) endpointFlags(d job.Job) {
	f.str("base-url", "", "OpenAI-compatible endpoint including /v1, for every stage unless overridden; e.g. http://127.0.0.1:8000/v1", func(j *job.Job, v string) { j.Rollout.BaseURL = v })
	f.str("model", "", "model for every stage unless overridden; e.g. Qwen/Qwen3-32B", func(j *job.Job, v string) { j.Rollout.Model = v })
	f.boolean("legacy-max-tokens", false, "send the token limit as max_tokens instead of max_completion_tokens (older vLLM or SGLang)", func(j *job.Job, v bool) { j.Rollout.LegacyMaxTokens = v })
	f.str("api-key-env", d.Rollout.APIKeyEnv, "environment variable holding the API key (empty or unset: no key sent)", func(j *job.Job, v string) { j.Rollout.APIKeyEnv = v })
	for _, st := range []struct {
		name string
		ep   func(j *job.Job) *job.Endpoint
	}{
		{"distill", func(j *job.Job) *job.Endpoint { return &j.Distill.Endpoint }},
		{"judge", func(j *job.Job) *job.Endpoint { return &j.Judge.Endpoint }},
		{"empirical", func(j *job.Job) *job.Endpoint { return &j.Empirical.Endpoint }},
	} {
		f.str(st.name+"-base-url", "", "endpoint for the "+st.name+" stage (default: --base-url)", func(j *job.Job, v string) { st.ep(j).BaseURL = v })
		f.str(st.name+"-model", "", "model for the "+st.name+" stage (default: --model)", func(j *job.Job, v string) { st.ep(j).Model = v })
		f.str(st.name+"-api-key-env", "", "API key variable for the "+st.name+" stage (default: --api-key-env)", func(j *job.Job, v string) { st.ep(j).APIKeyEnv = v })
	}
}

// stageFlags binds the flags of the stages' settings.
func (f *flagSet) stageFlags(d job.Job) {
	f.integer("n", d.Rollout.N, "rollouts per problem", func(j *job.Job, v int) { j.Rollout.N = v })
	f.integer("per-request", d.Rollout.PerRequest, "samples per request (the n parameter); 1 lets a larger --n reuse cached rollouts", func(j *job.Job, v int) { j.Rollout.PerRequest = v })
	f.float("temperature", *d.Rollout.Temperature, "rollout sampling temperature", func(j *job.Job, v float64) { j.Rollout.Temperature = &v })
	f.integer("max-tokens", 0, "rollout max completion tokens, also of the grounded style's closed-book answers (0: server default); e.g. 16384", func(j *job.Job, v int) { j.Rollout.MaxTokens = v })
	f.integer("distill-max-tokens", 0, fmt.Sprintf("max completion tokens of the distiller, and of the grounded style's analyze, synthesize and enrich (0: the server's limit; the grounded style's default %d); e.g. 4096", job.GroundedDistillMaxTokens), func(j *job.Job, v int) { j.Distill.MaxTokens = v })
	f.integer("judge-max-tokens", 0, fmt.Sprintf("max completion tokens of the validity judge (0: the server's limit; the grounded style's default %d); e.g. 2048", job.GroundedJudgeMaxTokens), func(j *job.Job, v int) { j.Judge.MaxTokens = v })
	f.integer("empirical-max-tokens", 0, fmt.Sprintf("max completion tokens of the empirical stage's judge, and of the grounded style's scorer (0: the server's limit; the grounded style's default %d); e.g. 2048", job.GroundedJudgeMaxTokens), func(j *job.Job, v int) { j.Empirical.MaxTokens = v })
	f.int64Flag("seed", 0, "base seed; sample i is sent seed+i", func(j *job.Job, v int64) { j.Rollout.Seed = v })
	f.integer("min-correct", d.Selection.MinCorrect, "distill only problems with at least this many correct rollouts", func(j *job.Job, v int) { j.Selection.MinCorrect = v })
	f.integer("min-incorrect", d.Selection.MinIncorrect, "distill only problems with at least this many flawed rollouts", func(j *job.Job, v int) { j.Selection.MinIncorrect = v })
	f.integer("max-items", d.Distill.MaxItems, "most rubric items per problem", func(j *job.Job, v int) { j.Distill.MaxItems = v })
	f.boolean("judge", d.Judge.Enabled, "run the validity judge over every item (--judge=false to skip)", func(j *job.Job, v bool) { j.Judge.Enabled = v })
	f.str("judge-mode", d.Judge.Mode, "batch (one judge call per problem) or item (one per item)", func(j *job.Job, v string) { j.Judge.Mode = v })
	f.str("judge-order", job.OrderShuffled, "how a judge shown several items at once sees them: shuffled (per judge and record, from judge.order_seed) or rubric (as runs before judge orders; resumes their run directories); e.g. --judge-order rubric", func(j *job.Job, v string) { j.Judge.Order = v })
	f.str("judge-layout", job.LayoutCache, "where the judge prompts put what varies: cache (the response, item or criterion last, so a server's prefix cache computes the rest once per record) or paper (the seeds' order; resumes run directories made before layouts); e.g. --judge-layout paper", func(j *job.Job, v string) { j.Judge.Layout = v })
	f.integer("judge-max-response-tokens", job.DefaultMaxResponseTokens, "the most estimated tokens (bytes/3) of a rollout the empirical stage's judge is shown; a longer one is shown head and tail and its pitfalls count as fallen into (-1: whole); e.g. --judge-max-response-tokens 6000", func(j *job.Job, v int) { j.Empirical.MaxResponseTokens = v })
	f.boolean("judge-group", d.Judge.Group, "with --empirical: judge all rollouts of a record (answers of a question) in one request, each in its own block, verdicts mapped back by name; a group request that fails is followed by one request per response, a group over the response budget is sent in parts; off by default (judge.group; needs --judge-layout cache); e.g. --judge-group", func(j *job.Job, v bool) { j.Judge.Group = v })
	f.boolean("drop-invalid", d.Judge.DropInvalid, "drop items the judge finds invalid", func(j *job.Job, v bool) { j.Judge.DropInvalid = v })
	f.boolean("empirical", d.Empirical.Enabled, "judge every rollout against the rubric and store each item's empirical validity", func(j *job.Job, v bool) { j.Empirical.Enabled = v })
	f.boolean("open-book", d.Empirical.OpenBook, "grounded style, with --empirical: also sample --n answers with the passage in the prompt and score them, so validate reports each criterion's open/closed-book edge (twice the stage's requests); e.g. --empirical --open-book", func(j *job.Job, v bool) { j.Empirical.OpenBook = v })
	f.float("alpha", d.Empirical.Alpha, "empirical validity threshold: an item is valid when corr > alpha and its satisfaction varies", func(j *job.Job, v float64) { j.Empirical.Alpha = v })
}

// limitFlags binds the flags of limits, budget, output and caching.
func (f *flagSet) limitFlags(d job.Job) {
	f.requestFlags(d)
	f.integer("problems-in-flight", 0, "most problems processed at once; a new one starts when the rollout endpoint can take its rollouts (0: four times --concurrency, bounded by a 256 MiB budget for the rollouts they hold; e.g. 64)", func(j *job.Job, v int) { j.Limits.ProblemsInFlight = v })
	f.integer("shard-rows", d.Output.ShardRows, "records per Parquet shard", func(j *job.Job, v int) { j.Output.ShardRows = v })
	f.duration("checkpoint-interval", d.Output.CheckpointInterval, "commit finished records and report.json this often", func(j *job.Job, v time.Duration) { j.Output.CheckpointInterval = v })
	f.str("cache", "", "response cache file (default RUN/cache.db); another run's cache lets this run reuse its answered requests, e.g. runs/n8/cache.db", func(j *job.Job, v string) { j.Cache = v })
	f.str("prompts-dir", "", "directory whose NAME.tmpl files replace the embedded prompt templates", func(j *job.Job, v string) { j.PromptsDir = v })
}

// requestFlags binds the flags of the request limits and the budget
// (distill run's, and distill refine --decompose's).
func (f *flagSet) requestFlags(d job.Job) {
	f.integer("concurrency", d.Limits.Concurrency, "requests in flight per endpoint; e.g. 512 for a vLLM server", func(j *job.Job, v int) { j.Limits.Concurrency = v })
	f.float("rpm", 0, "requests per minute per endpoint (0: no limit)", func(j *job.Job, v float64) { j.Limits.RequestsPerMinute = v })
	f.float("tpm", 0, "tokens per minute per endpoint (0: no limit)", func(j *job.Job, v float64) { j.Limits.TokensPerMinute = v })
	f.duration("attempt-timeout", d.Limits.AttemptTimeout, "deadline of one request attempt", func(j *job.Job, v time.Duration) { j.Limits.AttemptTimeout = v })
	f.integer("max-attempts", d.Limits.MaxAttempts, "attempts per request for retryable errors (429, 5xx, timeouts)", func(j *job.Job, v int) { j.Limits.MaxAttempts = v })
	f.float("max-cost-usd", 0, "stop cleanly (resumable) once the run, counting every session of it, has spent this many USD; every model it uses needs a price (prices: in the job file, or --free-models)", func(j *job.Job, v float64) { j.Budget.MaxCostUSD = v })
	f.int64Flag("max-total-tokens", 0, "stop cleanly (resumable) once the run, counting every session of it, has spent this many tokens", func(j *job.Job, v int64) { j.Budget.MaxTokens = v })
	f.str("budget-scope", "", "whose spending --max-cost-usd and --max-total-tokens cap in a partitioned job: worker (each worker's own, the default: K workers may spend K times them) or job (the whole job's: worker I of K stops at a Kth of them); e.g. --partition 3/16 --max-cost-usd 160 --budget-scope job stops this worker at $10", func(j *job.Job, v string) { j.Budget.Scope = v })
	f.str("free-models", "", "models that cost nothing, comma-separated (same as prices: {MODEL: 0}); e.g. Qwen/Qwen3-32B for a local vLLM server", func(j *job.Job, v string) {
		for _, m := range splitList(v) {
			if j.Prices == nil {
				j.Prices = map[string]job.Price{}
			}
			j.Prices[m] = job.Price{}
		}
	})
}

func (f *flagSet) str(name, def, help string, set func(j *job.Job, v string)) {
	bind(f, name, f.fs.String(name, def, help), set)
}

func (f *flagSet) integer(name string, def int, help string, set func(j *job.Job, v int)) {
	bind(f, name, f.fs.Int(name, def, help), set)
}

func (f *flagSet) float(name string, def float64, help string, set func(j *job.Job, v float64)) {
	bind(f, name, f.fs.Float64(name, def, help), set)
}

func (f *flagSet) boolean(name string, def bool, help string, set func(j *job.Job, v bool)) {
	bind(f, name, f.fs.Bool(name, def, help), set)
}

func (f *flagSet) duration(name string, def time.Duration, help string, set func(j *job.Job, v time.Duration)) {
	bind(f, name, f.fs.Duration(name, def, help), set)
}

func (f *flagSet) int64Flag(name string, def int64, help string, set func(j *job.Job, v int64)) {
	bind(f, name, f.fs.Int64(name, def, help), set)
}

// parseFlags parses args into fs. On -h it prints the full usage; on a bad
// flag, the error and one line pointing at -h. ok is false when the command
// must end with code.
func parseFlags(fs *flag.FlagSet, args []string, usage func(io.Writer), stderr io.Writer) (ok bool, code int) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return true, exitOK
	case errors.Is(err, flag.ErrHelp):
		usage(stderr)
		return false, exitOK
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s -h' to see every flag.\n", fs.Name(), err, fs.Name())
	return false, exitUsage
}

// bind applies a flag's value to the job only when the flag was given, so
// the job file's value stands otherwise.
func bind[T any](f *flagSet, name string, v *T, set func(j *job.Job, v T)) {
	f.apply = append(f.apply, func(j *job.Job) {
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

// startJob is what distill run and distill plan do before their work: the
// log level, the job from --config and the flags, Ctrl-C handling (stop
// ends it) and the pipeline's options, with the progress on stderr unless
// --quiet. ok is false after a usage error, which it has printed.
func startJob(name string, f *flagSet, stderr io.Writer) (jb job.Job, ctx context.Context, stop func(), opt pipeline.Options, ok bool) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "%s: --log-level: %v\n", name, err)
		return jb, nil, nil, opt, false
	}
	jb, err := job.PrepareJob(*f.config, func(j *job.Job) {
		for _, apply := range f.apply {
			apply(j)
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return jb, nil, nil, opt, false
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop = watchSignals(context.Background(), sigs, func() { signal.Reset(os.Interrupt) }, func() { signal.Stop(sigs) }, stderr, *f.quiet)
	opt = pipeline.Options{Force: *f.force, RetryFailed: *f.retryFailed, ToolVersion: toolVersion(),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if !*f.quiet {
		opt.Status = stderr
		if fd, ok := stderr.(interface{ Fd() uintptr }); ok {
			opt.Terminal = term.IsTerminal(int(fd.Fd()))
		}
	}
	return jb, ctx, stop, opt, true
}

func runCmd(args []string, stdout, stderr io.Writer) int {
	f := newRunFlags()
	if ok, code := parseFlags(f.fs, batchArgs(args), f.usage, stderr); !ok {
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "distill run: unexpected argument %q (flags only)\nRun 'distill run -h' to see every flag.\n", f.fs.Arg(0))
		return exitUsage
	}
	job, ctx, stop, opt, ok := startJob("distill run", f, stderr)
	if !ok {
		return exitUsage
	}
	defer stop()
	for flag, path := range map[string]string{"--cpuprofile": *f.cpuProfile, "--memprofile": *f.memProfile} {
		// A profile replaces an earlier one, but never an input or a file of a run.
		if err := outpath.File(flag, path, true, job.Input.Paths...); err != nil {
			fmt.Fprintf(stderr, "distill run: %v\n", err)
			return exitUsage
		}
	}
	stopProfiles, err := startProfiles(*f.cpuProfile, *f.memProfile)
	if err != nil {
		fmt.Fprintf(stderr, "distill run: %v\n", err)
		return exitUsage
	}
	rep, err := pipeline.Run(ctx, job, opt)
	stop() // nothing is printed about signals after this
	if perr := stopProfiles(); perr != nil {
		fmt.Fprintf(stderr, "distill run: %v\n", perr)
	}
	if rep != nil {
		rep.WriteSummary(stdout, job.Out)
	}
	return exitCode(rep, err, stderr)
}

// exitCode prints what the user should do next and returns the exit code.
func exitCode(rep *pipeline.Report, err error, stderr io.Writer) int {
	var ue *job.UsageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "distill run: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "distill run: %v\n", err)
		return exitFailed
	case rep.Status == pipeline.StatusStopped && rep.StoppedBy == pipeline.StopBudget:
		fmt.Fprintf(stderr, "distill run: stopped: %s\nThe budget counts every session of this run, so the same command stops again at once: raise --max-cost-usd or --max-total-tokens (budget: in the job file) and run it again to resume.\n", rep.StopReason)
		return exitStopped
	case rep.Status == pipeline.StatusStopped && (rep.StoppedBy == pipeline.StopBatchFiles || rep.StoppedBy == pipeline.StopBatchCancelled):
		fmt.Fprintf(stderr, "distill run: stopped: %s\n", rep.StopReason) // the reason says what to do
		return exitStopped
	case rep.Status == pipeline.StatusStopped:
		fmt.Fprintf(stderr, "distill run: stopped (%s); run the same command again to resume\n", rep.StopReason)
		return exitStopped
	case rep.EmptyReason() != "":
		fmt.Fprintf(stderr, "distill run: %s\n", rep.EmptyReason())
		return exitProblems
	case rep.SomethingFailed():
		return exitProblems
	}
	return exitOK
}

const versionUsage = `Usage: distill version

Prints the build's version: the one make build sets (git describe), else what
the Go toolchain stamped into the binary (the module version, the VCS revision,
its commit time, a modified tree). Every record's provenance.tool_version holds
the same version.

Exit codes: 0 ok.
`

// isHelp: arg asks for a help page.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// watchSignals returns a context that ends on the first signal from sigs,
// saying so on stderr unless quiet. After it, afterFirst runs (distill
// gives SIGINT back its default action there, so a second Ctrl-C ends the
// process at once), and later signals from sigs are taken and ignored: a
// scheduler's SIGTERM reaches distill twice (Slurm signals the batch shell,
// which passes it on, and every process of the job), and the second must
// not kill a run that is committing what is finished. release stops the
// delivery of signals to sigs. The returned stop function must be called
// when the work is done; it waits for the watcher, so nothing is printed
// about signals after it returns (a normal finish never prints
// "stopping").
func watchSignals(parent context.Context, sigs <-chan os.Signal, afterFirst, release func(), stderr io.Writer, quiet bool) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-sigs:
			afterFirst()
			if !quiet {
				fmt.Fprintln(stderr, "distill: stopping; finished work is being written (Ctrl-C again to abort)")
			}
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case <-sigs: // already stopping
			case <-done:
				return
			}
		}
	})
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			release()
			cancel()
		})
	}
}

// parseDirAndFlags parses flags that may come before or after the one
// directory argument; it returns ok false and the exit code otherwise.
func parseDirAndFlags(fs *flag.FlagSet, args []string, usage func(io.Writer), stderr io.Writer, synopsis string) (string, bool, int) {
	var dirs []string
	for {
		if ok, code := parseFlags(fs, args, usage, stderr); !ok {
			return "", false, code
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) != 1 {
		fmt.Fprintf(stderr, "%s: want one run directory, got %d\nUsage: %s (see -h)\n", fs.Name(), len(dirs), synopsis)
		return "", false, exitUsage
	}
	return dirs[0], true, exitOK
}

func statusCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("distill status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print report.json and the manifest summary as JSON")
	usage := func(w io.Writer) {
		fmt.Fprint(w, "Usage: distill status [--json] RUN_DIR...\n\nWhat a run directory holds: done, failed, left out, pending, validity, cost, and the\nprogress and ETA of a running run (known from its first second). Flags may come\nbefore or after RUN_DIR. Shards damaged on disk are named (see distill repair -h).\nSeveral run directories (the workers of a --partition job) are shown as one table,\na row per worker and their total, with the partitions missing or held twice.\n\nExamples:\n  distill status runs/demo\n  distill status runs/demo --json\n  distill status runs/big/part-*\n\nExit codes: 0 ok, 1 failed or damaged shards found, 2 usage error (no such run directory), 3 the run finished\nwith an empty corpus (the cause is the last line).\n\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	dirs, ok, code := parseDirsAndFlags(fs, args, usage, stderr, "distill status [--json] RUN_DIR...")
	if !ok {
		return code
	}
	for _, dir := range dirs {
		if code, ok := checkRunDir(fs.Name(), dir, stderr); !ok {
			return code
		}
	}
	if len(dirs) > 1 {
		return workersStatus(dirs, *asJSON, stdout, stderr)
	}
	st, err := pipeline.ReadStatus(dirs[0])
	if err != nil {
		fmt.Fprintf(stderr, "distill status: %v\n", err)
		return exitFailed
	}
	if *asJSON {
		if err := st.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "distill status: %v\n", err)
			return exitFailed
		}
	} else {
		st.WriteText(stdout)
	}
	if len(st.Damaged) > 0 {
		fmt.Fprintf(stderr, "distill status: %d damaged shard(s); see distill repair -h\n", len(st.Damaged))
		return exitFailed
	}
	if st.Report != nil && st.Report.EmptyReason() != "" {
		fmt.Fprintf(stderr, "distill status: %s\n", st.Report.EmptyReason())
		return exitProblems
	}
	return exitOK
}
