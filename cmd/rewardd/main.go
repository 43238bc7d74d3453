// Command rewardd serves rubric rewards to RL trainers over HTTP: OpenRLHF's
// remote reward protocol (POST /get_reward), slime's (POST /score), a NeMo
// Gym resource server's (POST /verify), and the native batch and group APIs
// (POST /v1/score, POST /v1/score_group, with RLCER's rubricator proposals
// and RGR's guidance, and POST /v1/rubricator_prompt), with GET /healthz
// and GET /metrics, and with --state-dir a live rubric per problem (GET
// /v1/rubric_stats); with a corpus, also an Open Reward Standard environment
// (docs/ors.md). Rubrics come from a loaded corpus (a run
// directory or a `distill export` directory), found by problem id or
// problem text, or travel in the request as the label.
//
// The first line on stdout is the base URL it listens on; logs go to stderr.
// It serves until SIGINT or SIGTERM, then answers the requests in flight
// before it exits. Exit codes: 0 after a clean shutdown, 1 when loading the
// corpus, listening or serving fails, 2 for a usage error (a --corpus that
// does not exist included, as a missing directory in every command).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/cmd/rewardd/internal/server"
	"github.com/rubricforge/rubricforge/internal/buildinfo"
	"github.com/rubricforge/rubricforge/internal/errwriter"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdout := errwriter.New(os.Stdout) // a failed write to it fails the command
	os.Exit(stdout.ExitCode(run(ctx, os.Args[1:], stdout, os.Stderr, os.Getenv), "rewardd", os.Stderr))
}

const usage = `Usage: rewardd --judge-base-url URL --judge-model MODEL [--corpus RUN_OR_EXPORT_DIR] [flags]
       rewardd --version   (the version, the VCS revision and time it was built from)

Serves rubric rewards to RL trainers: POST /get_reward (OpenRLHF), POST /score
(slime), POST /verify (a NeMo Gym resource server), POST /v1/score and
POST /v1/score_group (native; with RLCER rubricator proposals, RGR guidance and
off-policy marks), POST /v1/rubricator_prompt, GET /healthz, GET /metrics, and
with --state-dir a live rubric per problem (GET /v1/rubric_stats); with --corpus, the
corpus as an Open Reward Standard environment (GET /list_environments, /NAME/splits,
POST /NAME/tasks, /create_session, /create, /NAME/call, ...; docs/ors.md).
A grounded corpus's questions are judged against their passage, taken from the
corpus or the label, never from the request's prompt.

GET /healthz says ok; degraded (200, or 503 with ?strict=1) while the judge's
circuit breaker is open or more than 20% of the last minute's judgments failed,
however few were made (judge calls outstanding while none has finished for
--judge-stall-after count as failed, so a hung judge shows within that time),
or a judge of a --judge-panel is not well (its own breaker open, or 20% of its
calls failed), naming it; unhealthy (503) while the judge refuses rewardd (401,
403, an exhausted quota).

Examples:
  rewardd --corpus runs/math16k --judge-base-url http://127.0.0.1:8000/v1 --judge-model Qwen/Qwen3-32B
  rewardd --corpus exports/verl --judge-base-url https://api.openai.com/v1 --judge-model gpt-4.1-mini \
      --judge-api-key-env OPENAI_API_KEY --cache rewardd-cache.db --scheme rgr
  REWARDD_TOKEN=... rewardd --addr 10.0.0.5:8700 --allow-remote --token-env REWARDD_TOKEN ...
  rewardd --corpus runs/math16k --judge-base-url http://127.0.0.1:8000/v1 --judge-model Qwen/Qwen3-32B \
      --judge-panel panel.yaml   (a panel of judges: each asked about every response, k times the judge cost)

OpenRLHF: --reward.remote_url http://127.0.0.1:8700/get_reward
slime:    --rm-type remote_rm --rm-url http://127.0.0.1:8700/score --reward-key reward
ORS:      rewardd --corpus exports/verl --ors-env math16k --ors-max-sessions 16384 ...
          (TRL's openreward, any ORS client: base URL http://127.0.0.1:8700, environment math16k)
NeMo Gym: a resource server at http://127.0.0.1:8700 (POST /verify; docs/nemo-gym.md)
Loops:    rewardd --corpus exports/verl --state-dir runs/live --retire-saturated ...
          (RLCER proposals, RGR guidance, a live rubric; docs/training-loops.md)

Flags:
`

type options struct {
	corpus, addr, scheme, tokenEnv, cache, promptsDir, logLevel string
	allowRemote                                                 bool
	judgeURL, judgeModel, judgeKeyEnv, onJudgeFailure           string
	judgeSeed, judgeKind, judgePanel                            string
	judgeConcurrency, judgeRepairs, judgeMaxTokens, maxAttempts int
	groundedRepairs                                             int
	legacyMaxTokens, judgeWarmFirst, judgeGroup                 bool
	judgeTimeout, attemptTimeout, drain, queueWait, stallAfter  time.Duration
	verdictCache, maxQueue                                      int
	judgePassageTokens, judgeMaxResponseTokens                  int
	judgeLayout                                                 string
	maxBody, maxInflight                                        int64
	params                                                      reward.Params
	breaker                                                     server.BreakerOptions
	memberDeadline                                              time.Duration
	ors                                                         server.ORSOptions
	live                                                        liveOptions
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{params: reward.DefaultParams()}
	fs := flag.NewFlagSet("rewardd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.serverFlags(fs)
	o.judgeFlags(fs)
	o.formulaFlags(fs)
	o.orsFlags(fs)
	o.liveFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nExit codes: 0 clean shutdown, 1 failed (corpus, listen, serve), 2 usage error.\n")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return o, errors.Join(o.check(), errors.Join(o.checkLive(set)...))
}

// serverFlags are the flags of the corpus, the listener and the HTTP server.
func (o *options) serverFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.corpus, "corpus", "", "`PATH` of a run directory, an export directory of distill export (any format: verl, rar, srar-lines, jsonl), one of their data files, or a JSONL file of records, whose rubrics to serve; rewardd refuses to start when it holds no rubric; empty: every request carries its label (e.g. --corpus runs/math16k)")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8700", "listen address; port 0 picks a free one, printed as the first stdout line (e.g. --addr 127.0.0.1:0)")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback --addr (e.g. --addr 0.0.0.0:8700 --allow-remote --token-env REWARDD_TOKEN)")
	fs.StringVar(&o.scheme, "scheme", "", "default scheme of math rubrics when a request names none: srar, rgr, grounded, rlcer or papo; empty: each label's own; a grounded corpus's questions are always scored under grounded (e.g. --scheme rgr)")
	fs.StringVar(&o.tokenEnv, "token-env", "", "environment variable holding a bearer token every request but GET /healthz must send (e.g. --token-env REWARDD_TOKEN)")
	fs.Int64Var(&o.maxBody, "max-body", 64<<20, "largest request body in bytes; OpenRLHF 0.9 posts a whole rollout in one request, 1,024 samples of 8K-token responses are 36 MB (e.g. --max-body 402653184 for 8,192 such samples)")
	fs.Int64Var(&o.maxInflight, "max-inflight-bytes", 512<<20, "request bodies held at once, in bytes (at least --max-body); a body holds room as its bytes arrive, not what it declares, and waits up to --queue-wait for more; rewardd needs about 2.2 times this plus the corpus index plus 64 MiB, with GOMEMLIMIT set (docs/rewardd.md) (e.g. --max-inflight-bytes 1073741824)")
	fs.IntVar(&o.maxQueue, "max-queue", 4096, "scoring requests in progress at most; more wait up to --queue-wait for a slot (e.g. --max-queue 16384 for OpenRLHF's one request per sample)")
	fs.DurationVar(&o.queueWait, "queue-wait", time.Minute, "how long a request waits for room (--max-inflight-bytes, --max-queue) before 503 with Retry-After (e.g. --queue-wait 30s)")
	fs.DurationVar(&o.drain, "drain-timeout", 2*time.Minute, "on SIGTERM, how long to wait for the requests in flight (e.g. --drain-timeout 30s)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level on stderr: debug, info, warn, error (e.g. --log-level debug)")
}

// judgeFlags are the flags of the satisfaction judge and its client.
func (o *options) judgeFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.judgeURL, "judge-base-url", "", "OpenAI-compatible endpoint of the satisfaction judge, including /v1 (e.g. --judge-base-url http://127.0.0.1:8000/v1)")
	fs.StringVar(&o.judgeModel, "judge-model", "", "judge model (e.g. --judge-model Qwen/Qwen3-32B)")
	fs.StringVar(&o.judgeKeyEnv, "judge-api-key-env", "", "environment variable holding the judge's API key, sent to --judge-base-url only and never logged; no default, so that no key goes to an endpoint you did not name one for; empty: no key (e.g. --judge-api-key-env OPENAI_API_KEY)")
	fs.IntVar(&o.judgeConcurrency, "judge-concurrency", 64, "judge requests in flight at most (e.g. --judge-concurrency 256 for a vLLM server)")
	fs.IntVar(&o.judgeRepairs, "judge-repairs", 2, "repair turns after a satisfaction judge reply that does not parse; 0: none (e.g. --judge-repairs 1)")
	fs.IntVar(&o.groundedRepairs, "grounded-judge-repairs", 0, "repair turns after a grounded judge reply that does not parse; 0, seed 001's rule: an invalid output is a judge failure, paid 0 (--on-judge-failure), not repaired; N shows it back with the parser's error up to N times, a deviation from the paper (e.g. --grounded-judge-repairs 1)")
	fs.IntVar(&o.judgeMaxTokens, "judge-max-tokens", 0, "judge max completion tokens; 0: the server's default (e.g. --judge-max-tokens 2048)")
	fs.BoolVar(&o.legacyMaxTokens, "legacy-max-tokens", false, "send the token limit as max_tokens for older vLLM or SGLang (e.g. --legacy-max-tokens)")
	fs.DurationVar(&o.judgeTimeout, "judge-timeout", 100*time.Second, "deadline for judging one request; a verdict not in by then is judge_ok:false; keep it under the trainer's timeout, slime 120s, OpenRLHF 180s (e.g. --judge-timeout 60s)")
	fs.DurationVar(&o.stallAfter, "judge-stall-after", 20*time.Second, "judge calls outstanding while none has finished for this long count as failed judgments in /healthz and /metrics, so a hung judge shows long before --judge-timeout; set it above the judge's slowest answer (e.g. --judge-stall-after 45s)")
	fs.DurationVar(&o.attemptTimeout, "judge-attempt-timeout", time.Minute, "deadline of one judge request attempt (e.g. --judge-attempt-timeout 30s)")
	fs.IntVar(&o.maxAttempts, "judge-max-attempts", 4, "attempts per judge request for 429, 5xx, timeouts and resets (e.g. --judge-max-attempts 6)")
	fs.IntVar(&o.judgePassageTokens, "judge-passage-tokens", prompts.DefaultJudgePassageTokens, fmt.Sprintf("grounded questions: the most estimated tokens (bytes/3) of the passage the judge is shown; a longer passage is cut there, with a note saying so, and counted in rewardd_judge_passages_cut_total; at least %d; keep it well under the judge's context (e.g. --judge-passage-tokens 8192 for a 32K judge)", prompts.MinJudgePassageTokens))
	fs.StringVar(&o.judgeLayout, "judge-layout", string(prompts.LayoutCache), "where the judge prompt puts the response: cache (last, after the instructions, the rubric or criteria and the passage, so that a server's prefix cache computes all but the response once per group) or paper (the seeds' order: seed 001 puts the criteria after the response); part of every verdict's cache key (e.g. --judge-layout paper)")
	fs.BoolVar(&o.judgeWarmFirst, "judge-warm-first", true, "send a group's first judge request (a rubric's first response in a request) alone and the others once it is answered (or has taken --judge-stall-after), so that the judge server's prefix cache computes what they share once; costs one judge latency per group (docs/caching.md); sends them at once when false, for a server without a prefix cache (e.g. --judge-warm-first=false)")
	fs.BoolVar(&o.judgeGroup, "judge-group", false, "judge the responses of one rubric (a math rubric or a grounded question) in a request in one judge request (each in its own block, in an order drawn per request, verdicts or scores mapped back by name) instead of one request each; responses that do not fit together in --judge-max-response-tokens are sent in parts that do; a group request that fails (over the judge's context, a reply still unusable after repairs) is followed by one request per response; a --judge-panel still asks each judge one response at a time; off by default: its agreement with one request per response has not been measured on a real judge (docs/judge-reliability.md) (e.g. --judge-group)")
	fs.IntVar(&o.judgeMaxResponseTokens, "judge-max-response-tokens", prompts.DefaultJudgeMaxResponseTokens, fmt.Sprintf("the most estimated tokens (bytes/3) of a response the judge is shown, sized for a 32K-token judge; a longer response is shown head and tail with a line saying how much was cut, every PITFALL counts as fallen into in it (its hidden middle may hold one), and it is counted in rewardd_judge_responses_cut_total; at least %d, -1 for no budget; keep it under the judge's context minus the rubric, the passage and --judge-max-tokens (e.g. --judge-max-response-tokens 6000 for a 16K judge)", prompts.MinJudgeMaxResponseTokens))
	fs.StringVar(&o.cache, "cache", "", "judge response cache file, kept across restarts; empty: verdicts are cached in memory only (e.g. --cache rewardd-cache.db)")
	fs.IntVar(&o.verdictCache, "verdict-cache", 100_000, "parsed verdicts kept in memory, in responses; -1: none (e.g. --verdict-cache 1000000)")
	fs.StringVar(&o.onJudgeFailure, "on-judge-failure", reward.OnJudgeFailureFloor, "what a response whose judgment failed is paid: floor (the lowest reward any judgment could give it), outcome (the accuracy-only reward), error (503 with Retry-After, for trainers that retry) (e.g. --on-judge-failure error)")
	fs.IntVar(&o.breaker.Failures, "judge-breaker-failures", 5, "judge calls in a row ending in an outage (timeout, refused or reset connection, 5xx or 429 after every retry) that open the circuit breaker: answers then take --on-judge-failure at once (e.g. --judge-breaker-failures 10)")
	fs.DurationVar(&o.breaker.Probe, "judge-breaker-probe", 5*time.Second, "how long the open breaker waits before one call probes the judge; doubles after a failed probe, up to 1m (e.g. --judge-breaker-probe 10s)")
	fs.StringVar(&o.judgeSeed, "judge-seed", "0", "sampling seed sent with every judge request, part of every verdict's cache key; none sends no seed, for a server that refuses the seed parameter (e.g. --judge-seed 7, --judge-seed none)")
	fs.StringVar(&o.judgeKind, "judge-endpoint-kind", "", "kind of server behind --judge-base-url, part of every verdict's cache key, so one kind's verdicts are not replayed as another's while two servers of one kind share them; empty: openai for api.openai.com, else openai-compatible (e.g. --judge-endpoint-kind vllm)")
	fs.StringVar(&o.judgePanel, "judge-panel", "", "YAML `FILE` listing a panel of judges (name, base_url, model, api_key_env, endpoint_kind, temperature, top_p, max_tokens, prompts_dir; what a judge leaves out comes from the --judge-* flags): every judge is asked about every response, which multiplies the judge requests by the panel's size; an item's verdict is a strict majority of the votes for the response, a failed judge voting against it and a tie going against it; a grounded score is the lower median, a failed judge's counted as 0; judge_ok is false only when every judge failed (e.g. --judge-panel panel.yaml)")
	fs.DurationVar(&o.memberDeadline, "judge-member-deadline", 30*time.Second, "with --judge-panel, how long the panel waits for a judge once another judge has answered; one not in by then is cut off, its vote counted against the response, and its own circuit breaker counts the cut as an outage (so a hung judge soon stops being asked); set it above the slowest judge's answer time less the fastest's; 0 waits up to --judge-timeout (e.g. --judge-member-deadline 60s)")
	fs.StringVar(&o.promptsDir, "prompts-dir", "", "directory whose satisfy.tmpl, score_grounded.tmpl (with --judge-layout paper, satisfy_paper.tmpl and score_grounded_paper.tmpl) and repair.tmpl replace the embedded judge templates (e.g. --prompts-dir my-prompts)")
}

// orsFlags are the flags of the Open Reward Standard environment.
func (o *options) orsFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ors.Env, "ors-env", "rubricforge", "name of the Open Reward Standard environment the --corpus is served as, the first segment of its paths (/NAME/tasks, /NAME/call) (e.g. --ors-env math16k)")
	fs.IntVar(&o.ors.MaxSessions, "ors-max-sessions", 4096, "ORS sessions held at once; one more is refused with 503 and Retry-After once the idle ones are dropped (e.g. --ors-max-sessions 16384 for 1,024 prompts x 16 rollouts in flight)")
	fs.DurationVar(&o.ors.SessionIdle, "ors-session-idle", 15*time.Minute, "an ORS session without a request (a ping, a call) for this long is dropped; the SDK's client pings every 10s (e.g. --ors-session-idle 5m)")
}

// formulaFlags are the constants of the reward formulas.
func (o *options) formulaFlags(fs *flag.FlagSet) {
	fs.Float64Var(&o.params.RSug, "r-suggest", o.params.RSug, "SRaR budget R_SUG of the SUGGEST items (e.g. --r-suggest 0.5)")
	fs.Float64Var(&o.params.RPit, "r-pitfall", o.params.RPit, "SRaR budget R_PIT of the PITFALL items, negative (e.g. --r-pitfall -0.5)")
	fs.Float64Var(&o.params.RBon, "r-bonus", o.params.RBon, "SRaR budget R_BON of the BONUS items (e.g. --r-bonus 0.5)")
	fs.Float64Var(&o.params.Lambda, "lambda", o.params.Lambda, "SRaR weight λ of the format reward in r_base = (1-λ)·accuracy + λ·format (e.g. --lambda 0.2)")
	fs.Float64Var(&o.params.Alpha, "alpha", o.params.Alpha, "RLCER validity threshold: an item is valid when its satisfaction varies and corr > alpha (e.g. --alpha 0.2)")
	o.penaltyCorrFlag(fs)
}

func (o *options) check() error {
	var errs []error
	if o.judgePanel == "" && (o.judgeURL == "" || o.judgeModel == "") {
		errs = append(errs, errors.New("--judge-base-url and --judge-model are required (or a --judge-panel whose judges name theirs)"))
	}
	if _, err := llm.ParseSeed(o.judgeSeed); err != nil {
		errs = append(errs, fmt.Errorf("--judge-seed: %w", err))
	}
	if err := llm.CheckEndpointKind(o.judgeKind); err != nil {
		errs = append(errs, fmt.Errorf("--judge-endpoint-kind: %w", err))
	}
	if o.scheme != "" && !slices.Contains(schema.Schemes, o.scheme) {
		errs = append(errs, fmt.Errorf("--scheme %q is not one of %s", o.scheme, strings.Join(schema.Schemes, ", ")))
	}
	if err := o.params.Check(); err != nil {
		errs = append(errs, err)
	}
	if o.judgePassageTokens < prompts.MinJudgePassageTokens {
		errs = append(errs, fmt.Errorf("--judge-passage-tokens %d is below %d: the judge would see too little of a passage to grade against", o.judgePassageTokens, prompts.MinJudgePassageTokens))
	}
	if _, err := prompts.ParseLayout(o.judgeLayout); err != nil || o.judgeLayout == "" {
		if err == nil {
			err = errors.New(`"" is not a judge layout: want cache or paper`)
		}
		errs = append(errs, fmt.Errorf("--judge-layout: %w", err))
	}
	if o.judgeMaxResponseTokens != -1 && o.judgeMaxResponseTokens < prompts.MinJudgeMaxResponseTokens {
		errs = append(errs, fmt.Errorf("--judge-max-response-tokens %d is below %d: the judge would see too little of a response to grade it (-1: no budget)", o.judgeMaxResponseTokens, prompts.MinJudgeMaxResponseTokens))
	}
	if err := reward.CheckJudgeFailurePolicy(o.onJudgeFailure); err != nil {
		errs = append(errs, fmt.Errorf("--%w", err))
	}
	if o.allowRemote && o.tokenEnv == "" {
		errs = append(errs, errors.New("--allow-remote needs --token-env: a server other hosts can reach must require a bearer token"))
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		errs = append(errs, fmt.Errorf("--addr %q: %w", o.addr, err))
	} else if ip := net.ParseIP(host); !o.allowRemote && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		errs = append(errs, fmt.Errorf("--addr %s is not a loopback address; add --allow-remote (and --token-env) to serve other hosts", o.addr))
	}
	if o.judgeConcurrency < 1 || o.maxQueue < 1 || o.maxBody < 1 || o.maxInflight < 1 || o.judgeTimeout <= 0 || o.stallAfter <= 0 || o.drain <= 0 || o.queueWait <= 0 ||
		o.breaker.Failures < 1 || o.breaker.Probe <= 0 || o.ors.MaxSessions < 1 || o.ors.SessionIdle <= 0 {
		errs = append(errs, errors.New("--judge-concurrency, --max-queue, --max-body, --max-inflight-bytes, --queue-wait, --judge-timeout, --judge-stall-after, --drain-timeout, --judge-breaker-failures, --judge-breaker-probe, --ors-max-sessions and --ors-session-idle must be positive"))
	}
	if o.memberDeadline < 0 {
		errs = append(errs, fmt.Errorf("--judge-member-deadline %s: a duration of 0 (none) or more", o.memberDeadline))
	}
	if o.ors.Env == "" || strings.ContainsAny(o.ors.Env, "/?# ") {
		errs = append(errs, fmt.Errorf("--ors-env %q: a name of one path segment, without /, ?, # or spaces", o.ors.Env))
	}
	if o.groundedRepairs < 0 {
		errs = append(errs, fmt.Errorf("--grounded-judge-repairs %d is negative; 0 repairs none", o.groundedRepairs))
	}
	return errors.Join(errs...)
}

// version overrides the version the build information gives, when set at
// build time with -ldflags "-X main.version=v1.2.3" (the Makefile does).
var version = ""

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintln(stdout, "rewardd", buildinfo.Read(version))
		return exitOK
	}
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rewardd: %v\n(rewardd -h lists every flag)\n", err)
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "rewardd: --log-level: %v\n", err)
		return exitUsage
	}
	if _, err := os.Stat(o.corpus); o.corpus != "" && err != nil {
		// A corpus path that names nothing is a usage error, as in distill and validate.
		fmt.Fprintf(stderr, "rewardd: --corpus %s: %v\n", o.corpus, err)
		return exitUsage
	}
	token, apiKey, err := secrets(o, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "rewardd: %v\n", err)
		return exitUsage
	}
	o.live.apiKey = apiKey // --judge-api-key-env's: elicitation asks --judge-base-url
	judges, err := o.judges(apiKey, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "rewardd: %v\n", err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := serve(ctx, o, token, judges, stdout, log); err != nil {
		log.Error("rewardd failed", "error", err.Error())
		return exitFailed
	}
	return exitOK
}

// secrets reads the bearer token and the judge's API key from the variables
// the flags name. White space around them (a newline from a secrets file)
// is trimmed; a variable named but unset or blank is an error, never a
// silent "no token" or "no key".
func secrets(o *options, getenv func(string) string) (token, apiKey string, err error) {
	if o.tokenEnv != "" {
		if token = strings.TrimSpace(getenv(o.tokenEnv)); token == "" {
			return "", "", fmt.Errorf("--token-env %s: the variable is unset or blank", o.tokenEnv)
		}
	}
	if o.judgeKeyEnv != "" {
		if apiKey = strings.TrimSpace(getenv(o.judgeKeyEnv)); apiKey == "" {
			return "", "", fmt.Errorf("--judge-api-key-env %s: the variable is unset or blank (leave the flag out for a judge that needs no key)", o.judgeKeyEnv)
		}
	}
	return token, apiKey, nil
}

// logLoaded logs what the corpus loaded: its problems, or questions.
func logLoaded(log *slog.Logger, path string, st server.LoadStats, took time.Duration) {
	counts := []any{"problems", st.Loaded}
	switch {
	case st.Grounded == st.Loaded && st.Loaded > 0:
		counts = []any{"questions", st.Loaded}
	case st.Grounded > 0:
		counts = []any{"problems", st.Loaded - st.Grounded, "questions", st.Grounded}
	}
	log.Info("corpus loaded", append(append([]any{"path", path}, counts...), "rows", st.Records, "files", st.Files,
		"duplicates", st.Duplicates, "skipped", st.Skipped, "seconds", took.Seconds())...)
}

// serve loads the corpus, builds the judge and answers requests until ctx
// ends.
func serve(ctx context.Context, o *options, token string, judges []judgeSpec, stdout io.Writer, log *slog.Logger) error {
	var index *server.Index
	if o.corpus != "" {
		start := time.Now()
		x, st, err := server.LoadIndex(o.corpus, log)
		if err != nil {
			return err
		}
		logLoaded(log, o.corpus, st, time.Since(start))
		index = x
	}
	var responses *cache.Cache
	if o.cache != "" {
		c, err := cache.Open(o.cache)
		if err != nil {
			return err
		}
		defer func() {
			if err := c.Close(); err != nil { // every answer was durable once used: the index is what may be lost
				log.Warn("closing the response cache", "path", o.cache, "err", err)
			}
		}()
		responses = c
	}
	meter := llm.NewMeter(nil, llm.Budget{})
	ps, err := prompts.Load(o.promptsDir)
	if err != nil {
		return err
	}
	j, closeJudges, err := o.newJudge(judges, responses, meter, log)
	if err != nil {
		return err
	}
	defer closeJudges()
	live, err := o.openLive(log)
	if err != nil {
		return err
	}
	var elicit *server.ElicitOptions
	if live != nil {
		defer func() {
			if err := live.Close(); err != nil { // every line was synced as it was written
				log.Warn("closing the live state", "path", o.live.stateDir, "err", err)
			}
		}()
		e, closeElicit, err := o.elicitOptions(o.live.apiKey, responses, live.ElicitSpent(), log)
		if err != nil {
			return err
		}
		defer closeElicit()
		elicit = e
	}
	srv, err := server.New(server.Config{Index: index, Judge: j, Meter: meter, Params: o.params, Scheme: o.scheme, Live: live, SplitState: o.live.splitState, Elicit: elicit,
		MaxBodyBytes: o.maxBody, MaxInflightBytes: o.maxInflight, MaxQueue: o.maxQueue, QueueWait: o.queueWait, Timeout: o.judgeTimeout, StallAfter: o.stallAfter, PanelMemberDeadline: o.memberDeadline, OnJudgeFailure: o.onJudgeFailure, Breaker: o.breaker, Token: token, ORS: o.ors, Prompts: ps, Logger: log,
		AllAtOnce: !o.judgeWarmFirst, Group: o.judgeGroup})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.addr, err)
	}
	if err := announce(stdout, ln.Addr()); err != nil {
		_ = ln.Close() // nothing was served; err is the failure
		return err
	}
	log.Info("serving", "addr", ln.Addr().String(), "judges", judgeNames(judges), "scheme", o.scheme, "auth", token != "")
	return srv.Serve(ctx, ln, o.drain)
}

// announce writes the base URL as the first line of stdout and flushes it:
// scripts and tests that start rewardd with port 0 read it to find the port.
func announce(stdout io.Writer, addr net.Addr) error {
	if _, err := fmt.Fprintf(stdout, "http://%s\n", addr); err != nil {
		return fmt.Errorf("writing the URL to stdout: %w", err)
	}
	if f, ok := stdout.(interface{ Sync() error }); ok {
		_ = f.Sync() // a pipe or terminal cannot sync; the write is already unbuffered
	}
	return nil
}

// repairs maps the flag (0 for none) to Options.Repairs (0 for the
// default, -1 for none).
func repairs(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
