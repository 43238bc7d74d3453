// Command simllm serves the simulated OpenAI-compatible endpoint of package
// internal/sim, for the demo and for trying the pipeline without a model.
// It is NOT a model: it recognizes the pipeline's own prompt templates and
// answers them with deterministic, plausible text, with optional latency,
// injected faults and a server-side rate limit (-limit-rpm, -limit-tpm).
// It also simulates OpenAI's Files and Batch API (/v1/files, /v1/batches)
// with a configurable turnaround, per-row failures, expiry and limits
// (the -batch-* flags); files live under -batch-dir until it stops.
//
// The first line on stdout is the base URL (for example
// http://127.0.0.1:41234/v1); the settings go to stderr. It serves until
// SIGINT or SIGTERM, then prints the requests it served by status ("none":
// no reply sent, because the request hung or its client left) and what the
// Batch API did. Exit codes:
// 0 after a clean shutdown, 1 when serving fails, 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/internal/errwriter"
	"github.com/rubricforge/rubricforge/internal/sim"
)

const defaultProblems = "examples/problems.jsonl"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdout := errwriter.New(os.Stdout) // a failed write to it fails the command
	os.Exit(stdout.ExitCode(run(ctx, os.Args[1:], stdout, os.Stderr), "simllm", os.Stderr))
}

type options struct {
	addr         string
	allowRemote  bool
	problems     string
	latency      time.Duration
	faultRate    float64
	rate429      optRate
	rate500      optRate
	rateHang     optRate
	rateTrunc    optRate
	rateMalform  optRate
	retryAfter   time.Duration
	hangMax      time.Duration
	limitRPM     int
	limitTPM     int
	correctRate  float64
	lengthRate   float64
	invalidRate  float64
	rolloutChars int
	seed         uint64
	byRequest    bool
	verbose      bool

	batchTurnaround  time.Duration
	batchRowFail     float64
	batchExpire      int
	batchMaxRequests int
	batchMaxBytes    int64
	batchDir         string

	contextTokens int
	prefixCache   bool
	prefixBlock   int
	prefixMin     int
	refuseFormat  bool
	plant         string
	judges        map[string]sim.JudgeProfile
}

func parseFlags(args []string, stderr io.Writer) (*options, *flag.FlagSet, error) {
	o := &options{}
	fs := flag.NewFlagSet("simllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "listen address; port 0 picks a free port (e.g. -addr 127.0.0.1:8000)")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback -addr such as 0.0.0.0:8000 (the endpoint has no authentication)")
	fs.StringVar(&o.problems, "problems", "", "JSONL file with \"problem\" and \"answer\" fields that decides correct rollouts (default "+defaultProblems+" when it exists; e.g. -problems data/math.jsonl)")
	fs.DurationVar(&o.latency, "latency", 0, "mean delay per request, each uniform in [0.5, 1.5] times it (e.g. -latency 200ms)")
	fs.Float64Var(&o.faultRate, "fault-rate", 0, "total fault rate spread evenly over 429, 500, hang, truncate and malformed (e.g. -fault-rate 0.05)")
	fs.Var(&o.rate429, "rate-429", "`rate` of 429 responses with Retry-After; overrides -fault-rate's share (e.g. -rate-429 0.1)")
	fs.Var(&o.rate500, "rate-500", "`rate` of 500 responses; overrides -fault-rate's share (e.g. -rate-500 0.02)")
	fs.Var(&o.rateHang, "rate-hang", "`rate` of requests held until the client gives up or -hang-max; overrides -fault-rate's share (e.g. -rate-hang 0.01)")
	fs.Var(&o.rateTrunc, "rate-truncate", "`rate` of 200 responses cut off halfway through the body; overrides -fault-rate's share (e.g. -rate-truncate 0.01)")
	fs.Var(&o.rateMalform, "rate-malformed", "`rate` of replies that break the stage's output format; overrides -fault-rate's share (e.g. -rate-malformed 0.05)")
	fs.DurationVar(&o.retryAfter, "retry-after", time.Second, "Retry-After sent with a 429, in whole seconds (e.g. -retry-after 2s)")
	fs.DurationVar(&o.hangMax, "hang-max", 30*time.Second, "longest a hung request is held before the connection is dropped (e.g. -hang-max 5s)")
	fs.IntVar(&o.limitRPM, "limit-rpm", 0, "server-side limit in requests per minute, as OpenAI enforces one: beyond it a 429 with Retry-After, and x-ratelimit-* headers on every response (0: none; e.g. -limit-rpm 600)")
	fs.IntVar(&o.limitTPM, "limit-tpm", 0, "server-side limit in tokens per minute (prompt plus completion tokens of each reply), like -limit-rpm (0: none; e.g. -limit-tpm 150000)")
	fs.Float64Var(&o.correctRate, "correct-rate", 0.6, "mean rate of correct rollouts, spread per problem (e.g. -correct-rate 0.4)")
	fs.Float64Var(&o.lengthRate, "length-rate", 0.02, "rate of rollouts cut off with finish_reason length (e.g. -length-rate 0)")
	fs.IntVar(&o.rolloutChars, "rollout-chars", 0, "pad every rollout to about this many bytes of filler reasoning, to measure memory at real rollout lengths (0: ~0.5-2 KB; 16,384 tokens are ~65,000; e.g. -rollout-chars 65000)")
	fs.Float64Var(&o.invalidRate, "invalid-rate", 0.03, "rate of rubric items the judge calls invalid (e.g. -invalid-rate 0.1)")
	fs.Uint64Var(&o.seed, "seed", 0, "varies every simulated choice (e.g. -seed 7)")
	fs.BoolVar(&o.byRequest, "faults-by-request", false, "draw each attempt's fault from the request and how often it came, not from the order of arrival, so that the same run meets the same faults and gives the same figures (make demo uses it; e.g. -faults-by-request -seed 1)")
	fs.DurationVar(&o.batchTurnaround, "batch-turnaround", 0, "time a batch takes from creation to completed, its rows answered evenly over it so that request_counts.completed grows (0: as fast as it can; e.g. -batch-turnaround 30s)")
	fs.Float64Var(&o.batchRowFail, "batch-row-fail", 0, "`rate` of batch rows answered with a 500 in the error file, drawn per row and batch so a resubmitted row can succeed (e.g. -batch-row-fail 0.02)")
	fs.IntVar(&o.batchExpire, "batch-expire", 0, "the first `K` batches created expire after answering the first half of their rows; the rest are batch_expired in the error file (e.g. -batch-expire 1)")
	fs.IntVar(&o.batchMaxRequests, "batch-max-requests", sim.DefaultBatchMaxRequests, "most requests a batch's input file may hold, OpenAI's limit by default; beyond it the batch fails with too_many_tasks (e.g. -batch-max-requests 1000)")
	fs.Int64Var(&o.batchMaxBytes, "batch-max-bytes", sim.DefaultBatchMaxBytes, "largest file /v1/files accepts, in bytes; OpenAI documents 200 MB (e.g. -batch-max-bytes 1000000)")
	fs.StringVar(&o.batchDir, "batch-dir", "", "directory for uploaded and output files, in a subdirectory removed at shutdown (default: the system's temp dir; e.g. -batch-dir /scratch)")
	fs.StringVar(&o.plant, "plant", "", "plant rubric items of known kinds for testing discrimination and distill refine: comma-separated shares of the items that are misaligned, saturated, dead, noise, the chance an aligned item gets a paraphrase (redundant), the judge's flip rate (judge-noise), the chance a paraphrase's verdict flips on a draw of its own (paraphrase-noise), and the share of problems solved rarely, 3-15% of their rollouts (few-correct); e.g. -plant misaligned=0.12,saturated=0.1,dead=0.1,noise=0.08,redundant=0.25,judge-noise=0.05,paraphrase-noise=0.05,few-correct=0.2")
	fs.Func("judge", "give the judge model `MODEL` known errors, repeatable for a panel: MODEL:false_valid=R,false_invalid=R,first_bias=R,flip=R,fail=R,late_lenience=R (rates in [0, 1]; first_bias: extra chance of calling an invalid item valid when shown first; flip: satisfaction verdicts and grounded scores turned over; fail: no usable answer; late_lenience: in a group judge request, chance of a verdict turned in the favour of the response shown last, falling linearly to none for the first: a simulated position bias); other models judge without errors (e.g. -judge lenient:false_valid=0.3,first_bias=0.2 -judge strict:false_invalid=0.1)", func(v string) error {
		model, p, err := sim.ParseJudgeProfile(v)
		if err != nil {
			return err
		}
		if o.judges == nil {
			o.judges = map[string]sim.JudgeProfile{}
		}
		if _, dup := o.judges[model]; dup {
			return fmt.Errorf("judge %s is given twice", model)
		}
		o.judges[model] = p
		return nil
	})
	fs.BoolVar(&o.verbose, "v", false, "log each injected fault on stderr")
	fs.BoolVar(&o.refuseFormat, "refuse-response-format", false, "answer a request asking for response_format json_object or json_schema with llama.cpp's 400 \"Failed to initialize samplers\", as a llama.cpp server that cannot build the grammar does")
	fs.IntVar(&o.contextTokens, "context-tokens", 0, "the model's context length in tokens (about 4 bytes each): a request whose prompt plus max_tokens exceeds it gets vLLM's 400 \"maximum context length\" (0: unbounded; e.g. -context-tokens 16384)")
	fs.BoolVar(&o.prefixCache, "prefix-cache", false, "model an automatic prefix cache (vLLM's, or a hosted API's prompt caching): a prompt reuses the whole blocks an answered prompt began with, reported in usage.prompt_tokens_details.cached_tokens (e.g. -prefix-cache)")
	fs.IntVar(&o.prefixBlock, "prefix-block-tokens", sim.DefaultPrefixBlockTokens, "the prefix cache's block size in tokens: vLLM's 16, OpenAI's steps of 128 (e.g. -prefix-block-tokens 128)")
	fs.IntVar(&o.prefixMin, "prefix-min-tokens", 0, "the shortest prompt the prefix cache caches at all, in tokens (OpenAI's is 1024; e.g. -prefix-min-tokens 1024)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `simllm: a SIMULATED OpenAI-compatible endpoint (not a real model) that answers
the rubricforge pipeline's own prompt templates, for the demo and for tests.

Usage:
  simllm [flags]

It prints the base URL (http://HOST:PORT/v1) as the first line of stdout and
serves POST /v1/chat/completions and GET /v1/models until SIGINT or SIGTERM,
and a SIMULATED OpenAI Files and Batch API (POST /v1/files; POST, GET
/v1/batches; GET /v1/batches/ID; POST /v1/batches/ID/cancel) whose rows get
the online replies. Nothing persists across restarts.

Examples:
  simllm -problems examples/problems.jsonl -latency 50ms -fault-rate 0.05
  simllm -rate-429 0.2 -retry-after 2s > url.txt &  URL=$(head -n 1 url.txt)
  simllm -latency 100ms -limit-rpm 600 -limit-tpm 200000
  simllm -batch-turnaround 30s -batch-row-fail 0.02 -batch-expire 1 -batch-max-requests 1000

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nExit codes: 0 clean shutdown, 1 serving failed, 2 usage error.\n")
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simllm: unexpected arguments %q\n", fs.Args())
		return nil, fs, errors.New("unexpected arguments")
	}
	return o, fs, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, _, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2 // the flag package or parseFlags has said why
	}
	cfg, err := o.config()
	if err != nil {
		fmt.Fprintf(stderr, "simllm: %v\n", err)
		return 2
	}
	if err := checkLoopback(o.addr, o.allowRemote); err != nil {
		fmt.Fprintf(stderr, "simllm: %v\n", err)
		return 2
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		fmt.Fprintf(stderr, "simllm: listening on %s: %v\n", o.addr, err)
		return 1
	}
	fmt.Fprintf(stdout, "http://%s/v1\n", ln.Addr())
	if f, ok := stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}
	fmt.Fprintln(stderr, "SIMULATED OpenAI-compatible endpoint (rubricforge llmtest): not a real model")
	fmt.Fprintf(stderr, "  model: %s (any model name is accepted)\n", sim.SimulatedModel)
	fmt.Fprintf(stderr, "  problems: %s (%d answers)\n", orNone(o.problems), len(cfg.Answers))
	fmt.Fprintf(stderr, "  correct-rate %.3g, length-rate %.3g, invalid-rate %.3g, seed %d, latency %v\n",
		o.correctRate, o.lengthRate, o.invalidRate, o.seed, o.latency)
	f := cfg.Faults
	fmt.Fprintf(stderr, "  faults: 429 %.3g (Retry-After %v), 500 %.3g, hang %.3g (max %v), truncate %.3g, malformed %.3g; drawn by %s\n",
		f.RateLimited, f.RetryAfter, f.ServerError, f.Hang, f.HangMax, f.Truncate, f.Malformed, map[bool]string{true: "request", false: "arrival"}[o.byRequest])
	fmt.Fprintf(stderr, "  rate limit: %s requests/min, %s tokens/min\n", limitText(o.limitRPM), limitText(o.limitTPM))
	fmt.Fprintf(stderr, "  batches (SIMULATED Files and Batch API): turnaround %v, row failures %.3g, the first %d batches expire, at most %d requests and %d bytes per file, files under %s\n",
		cfg.BatchTurnaround, cfg.BatchRowFailRate, cfg.BatchExpire, cfg.BatchMaxRequests, cfg.BatchMaxBytes, orDefault(cfg.BatchDir, os.TempDir()))

	srv := sim.New(cfg)
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "simllm: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "simllm: stopped after %d requests (by status: %s)\n", srv.Count(), statusText(srv.StatusCounts()))
	if st := srv.BatchStats(); st.FilesUploaded+st.UploadsRefused+st.BatchesCreated > 0 {
		fmt.Fprintf(stderr, "simllm: batch API: %d files uploaded (%d refused), %d batches (%s); rows answered %d, failed %d, expired %d, cancelled %d; requests answered more than once: %d\n",
			st.FilesUploaded, st.UploadsRefused, st.BatchesCreated, batchesText(st.Batches), st.RowsAnswered, st.RowsFailed,
			st.RowsExpired, st.RowsCancelled, st.RequestsRepeated)
	}
	if n := srv.UnknownProblems(); n > 0 {
		fmt.Fprintf(stderr, "simllm: %d rollout requests were for problems not in %s (always answered wrong)\n", n, orNone(o.problems))
	}
	return 0
}

// statusText lists request counts by status, lowest status first, as
// "200 9950, 429 50"; status 0 (no reply: hung, or the client left) is
// spelled "none".
func statusText(counts map[int]int64) string {
	if len(counts) == 0 {
		return "none sent"
	}
	parts := make([]string, 0, len(counts))
	for _, status := range slices.Sorted(maps.Keys(counts)) {
		name := strconv.Itoa(status)
		if status == 0 {
			name = "none"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, counts[status]))
	}
	return strings.Join(parts, ", ")
}

// batchesText lists batch counts by status, as "cancelled 1, completed 3".
func batchesText(byStatus map[string]int) string {
	if len(byStatus) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(byStatus))
	for _, status := range slices.Sorted(maps.Keys(byStatus)) {
		parts = append(parts, fmt.Sprintf("%s %d", status, byStatus[status]))
	}
	return strings.Join(parts, ", ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func limitText(perMinute int) string {
	if perMinute <= 0 {
		return "no limit on"
	}
	return strconv.Itoa(perMinute)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// config turns flags into an sim.Config. Rates given as 0 on the
// command line mean exactly 0.
func (o *options) config() (sim.Config, error) {
	rates := map[string]float64{"fault-rate": o.faultRate, "correct-rate": o.correctRate, "length-rate": o.lengthRate,
		"invalid-rate": o.invalidRate}
	for name, v := range map[string]optRate{"rate-429": o.rate429, "rate-500": o.rate500, "rate-hang": o.rateHang,
		"rate-truncate": o.rateTrunc, "rate-malformed": o.rateMalform} {
		if v.set {
			rates[name] = v.v
		}
	}
	if o.rolloutChars < 0 {
		return sim.Config{}, fmt.Errorf("-rollout-chars %d: want 0 or more bytes", o.rolloutChars)
	}
	for name, v := range rates {
		if v < 0 || v > 1 || v != v {
			return sim.Config{}, fmt.Errorf("-%s %v: want a rate between 0 and 1", name, v)
		}
	}
	if o.latency < 0 || o.retryAfter <= 0 || o.hangMax <= 0 {
		return sim.Config{}, errors.New("-latency must be >= 0, -retry-after and -hang-max > 0")
	}
	if o.limitRPM < 0 || o.limitTPM < 0 {
		return sim.Config{}, errors.New("-limit-rpm and -limit-tpm must be >= 0 (0: no limit)")
	}
	if o.contextTokens < 0 {
		return sim.Config{}, fmt.Errorf("-context-tokens %d: want 0 (unbounded) or more tokens", o.contextTokens)
	}
	if o.prefixBlock < 1 || o.prefixMin < 0 {
		return sim.Config{}, fmt.Errorf("-prefix-block-tokens %d, -prefix-min-tokens %d: want a block of 1 token or more and a minimum of 0 or more", o.prefixBlock, o.prefixMin)
	}
	if err := o.checkBatch(); err != nil {
		return sim.Config{}, err
	}
	f := sim.SpreadFaults(o.faultRate)
	for _, r := range []struct {
		v   optRate
		dst *float64
	}{{o.rate429, &f.RateLimited}, {o.rate500, &f.ServerError}, {o.rateHang, &f.Hang}, {o.rateTrunc, &f.Truncate}, {o.rateMalform, &f.Malformed}} {
		if r.v.set {
			*r.dst = r.v.v
		}
	}
	if f.Total() > 1 {
		return sim.Config{}, fmt.Errorf("fault rates add up to %.3g; want at most 1", f.Total())
	}
	f.RetryAfter, f.HangMax = o.retryAfter, o.hangMax
	cfg := sim.Config{
		CorrectRate:  zeroMeansNone(o.correctRate),
		LengthRate:   zeroMeansNone(o.lengthRate),
		InvalidRate:  zeroMeansNone(o.invalidRate),
		RolloutChars: o.rolloutChars,
		Latency:      o.latency,
		Faults:       f,
		LimitRPM:     o.limitRPM,
		LimitTPM:     o.limitTPM,
		Seed:         o.seed,
		// FaultsByRequest: the same faults whatever the order of arrival
		FaultsByRequest:  o.byRequest,
		BatchTurnaround:  o.batchTurnaround,
		BatchRowFailRate: o.batchRowFail,
		BatchExpire:      o.batchExpire,
		BatchMaxRequests: o.batchMaxRequests,
		BatchMaxBytes:    o.batchMaxBytes,
		BatchDir:         o.batchDir,
		Judges:           o.judges,
	}
	if o.plant != "" {
		p, err := sim.ParsePlant(o.plant)
		if err != nil {
			return sim.Config{}, fmt.Errorf("-plant: %w", err)
		}
		cfg.Plant = p
	}
	path := o.problems
	if path == "" {
		if _, err := os.Stat(defaultProblems); err == nil {
			path = defaultProblems
		} else if !errors.Is(err, fs.ErrNotExist) {
			return sim.Config{}, fmt.Errorf("checking %s: %w", defaultProblems, err)
		}
	}
	if path != "" {
		answers, err := sim.LoadAnswers(path)
		if err != nil {
			return sim.Config{}, err
		}
		cfg.Answers = answers
		o.problems = path
	}
	cfg.ContextTokens = o.contextTokens
	cfg.PrefixCache = sim.PrefixCache{On: o.prefixCache, BlockTokens: o.prefixBlock, MinTokens: o.prefixMin}
	cfg.RefuseResponseFormat = o.refuseFormat
	return cfg, nil
}

// checkBatch checks the -batch-* flags.
func (o *options) checkBatch() error {
	switch {
	case o.batchTurnaround < 0:
		return fmt.Errorf("-batch-turnaround %v: want a duration >= 0", o.batchTurnaround)
	case o.batchRowFail < 0 || o.batchRowFail > 1 || o.batchRowFail != o.batchRowFail:
		return fmt.Errorf("-batch-row-fail %v: want a rate between 0 and 1", o.batchRowFail)
	case o.batchExpire < 0:
		return fmt.Errorf("-batch-expire %d: want a number of batches >= 0", o.batchExpire)
	case o.batchMaxRequests < 1:
		return fmt.Errorf("-batch-max-requests %d: want at least 1", o.batchMaxRequests)
	case o.batchMaxBytes < 1:
		return fmt.Errorf("-batch-max-bytes %d: want at least 1", o.batchMaxBytes)
	}
	if o.batchDir != "" {
		if info, err := os.Stat(o.batchDir); err != nil {
			return fmt.Errorf("-batch-dir: %w", err)
		} else if !info.IsDir() {
			return fmt.Errorf("-batch-dir %s: not a directory", o.batchDir)
		}
	}
	return nil
}

// optRate is a rate flag that may be left unset.
type optRate struct {
	v   float64
	set bool
}

func (r *optRate) String() string {
	if r == nil || !r.set {
		return ""
	}
	return strconv.FormatFloat(r.v, 'g', -1, 64)
}

func (r *optRate) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("want a number: %w", err)
	}
	r.v, r.set = v, true
	return nil
}

// zeroMeansNone maps a command-line 0 to sim's "exactly zero" (negative).
func zeroMeansNone(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

// checkLoopback refuses to listen beyond this machine unless allowed.
func checkLoopback(addr string, allowRemote bool) error {
	if allowRemote {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-addr %q is not a loopback address; the simulated endpoint has no authentication, so pass -allow-remote to listen there anyway", addr)
}
