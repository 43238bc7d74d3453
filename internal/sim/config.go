package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Config sets the simulated model's behaviour. The zero value is usable: a
// zero rate takes its default; set a negative rate to mean exactly zero.
type Config struct {
	// Answers maps a trimmed problem text to its ground truth. Problems not in
	// it always get wrong answers in rollouts.
	Answers map[string]string
	// CorrectRate is the mean probability that a rollout is correct (default 0.6).
	// Per-problem rates spread around it: some problems are always solved,
	// some never.
	CorrectRate float64
	// LengthRate is the rate of rollouts cut off with finish_reason "length"
	// (default 0.02).
	LengthRate float64
	// RolloutChars pads every rollout's first step with filler sentences to
	// about this many bytes (0: no padding, rollouts of ~0.5-2 KB), to
	// measure a run at the length of real reasoning rollouts.
	RolloutChars int
	// InvalidRate is the rate of rubric items the judge calls invalid (default 0.03).
	InvalidRate float64
	// Plant, when set, plants rubric items of known kinds (see [Plant]);
	// nil leaves every reply as without it.
	Plant *Plant
	// Judges gives judge models known errors and position bias (see
	// [JudgeProfile]), keyed by the model name a request sends; other
	// models judge without errors.
	Judges map[string]JudgeProfile
	// Latency is the mean delay of every request; each delay is uniform in
	// [0.5, 1.5] times it.
	Latency time.Duration
	// Faults are the per-attempt fault rates.
	Faults Faults
	// LimitRPM and LimitTPM are a server-side rate limit in requests and
	// tokens per minute (0: none), enforced like OpenAI's: token buckets
	// holding a minute's allowance, refilled continuously; a request's
	// tokens are the prompt plus completion tokens its reply reports.
	// Beyond them the server answers 429 with Retry-After; while a limit is
	// set, every response carries OpenAI's x-ratelimit-* headers.
	LimitRPM, LimitTPM int
	// ContextTokens is the model's context length (0: unbounded): an
	// online request whose prompt tokens (as the replies count them, about
	// 4 bytes a token) plus its max_tokens exceed it is answered 400 with
	// vLLM's "maximum context length" message, as a real server refuses a
	// prompt that does not fit.
	ContextTokens int
	// PrefixCache models an inference server's automatic prefix cache and
	// reports the tokens it reused in usage.prompt_tokens_details (see
	// [PrefixCache]); off by default, as in a vLLM server started without
	// --enable-prompt-tokens-details. Batch rows report none.
	PrefixCache PrefixCache
	// Prompts, when set, records every online request's prompt and what a
	// prefix cache could not share of it (see [PromptRecorder]).
	Prompts *PromptRecorder
	// RefuseResponseFormat answers a request that asks for response_format
	// json_object or json_schema with llama.cpp's 400 "Failed to
	// initialize samplers", as a llama.cpp server does when it cannot build
	// the grammar.
	RefuseResponseFormat bool
	// BatchTurnaround is how long a batch of the simulated Batch API takes
	// from creation to "completed". Its rows are answered evenly over it,
	// so request_counts.completed grows linearly while it is in progress;
	// 0 answers them as fast as it can.
	BatchTurnaround time.Duration
	// BatchRowFailRate is the rate in [0, 1] of batch rows answered with a
	// 500 in the error file instead of a completion. It is drawn per row
	// (custom_id) and batch, so a row resubmitted in a later batch can
	// succeed; whether a row fails never changes what a row that succeeds
	// says.
	BatchRowFailRate float64
	// BatchExpire makes the first BatchExpire batches created (in creation
	// order, counting every batch) expire: such a batch answers the first
	// half of its rows (rounded down), then expires, at about half its
	// turnaround; its remaining rows go to the error file as
	// batch_expired.
	BatchExpire int
	// BatchMaxRequests is the most requests a batch's input file may hold
	// (default 50,000, OpenAI's documented limit); a file with more makes
	// the batch fail with too_many_tasks naming the first line beyond it.
	BatchMaxRequests int
	// BatchMaxBytes is the largest file POST /v1/files accepts (default
	// 200 MB, 200,000,000 bytes: OpenAI's documented limit, read strictly).
	BatchMaxBytes int64
	// BatchCreateLate makes the first BatchCreateLate creates of a batch
	// answer 504, as a gateway that timed out does, while the provider
	// still makes the batch: it appears (in GET and in the list, created
	// then) BatchCreateLag after the 504.
	BatchCreateLate int
	BatchCreateLag  time.Duration
	// BatchLoseCreates and BatchLoseUploads lose the replies of the first
	// creates and uploads after doing their work: the connection is closed
	// with no reply, so the client cannot know the batch was made or the
	// file stored.
	BatchLoseCreates, BatchLoseUploads int
	// BatchDir is where uploaded files and batch outputs are written, in a
	// fresh subdirectory that Close removes (default: the system's
	// temporary directory). Nothing persists across servers.
	BatchDir string
	// Seed varies every deterministic choice.
	Seed uint64
	// FaultsByRequest draws each attempt's fault and latency from the
	// request and the number of times this server has seen it, instead of
	// from the order in which attempts arrive: the same workload then meets
	// the same faults at any concurrency, and a run's figures repeat (the
	// demo). The counts cover up to a million distinct requests, then start
	// over.
	FaultsByRequest bool
	// KeepLog records every request for [Server.Log]. Leave it off for long
	// benchmarks.
	KeepLog bool
	// Logger receives debug lines about faults; nil discards them.
	Logger *slog.Logger
}

// The Batch API's default limits, OpenAI's documented ones.
const (
	DefaultBatchMaxRequests = 50_000
	DefaultBatchMaxBytes    = 200_000_000
)

// Faults are rates in [0, 1] of each injected failure, drawn per attempt.
// If they add up to more than 1 they are scaled down to sum to 1.
type Faults struct {
	// RateLimited answers 429 with a Retry-After header.
	RateLimited float64
	// ServerError answers 500.
	ServerError float64
	// Hang holds the request until the client gives up (or HangMax).
	Hang float64
	// Truncate sends status 200 and a Content-Length, then half the body,
	// then drops the connection.
	Truncate float64
	// Malformed answers 200 with output that breaks the stage's format.
	Malformed float64
	// RetryAfter is the Retry-After of a 429 (default 1s; whole seconds are sent).
	RetryAfter time.Duration
	// HangMax caps a hung request (default 30s); then the connection is dropped.
	HangMax time.Duration
}

// SpreadFaults divides one total fault rate evenly over every fault kind.
func SpreadFaults(total float64) Faults {
	each := total / 5
	return Faults{RateLimited: each, ServerError: each, Hang: each, Truncate: each, Malformed: each}
}

// Total is the sum of the fault rates.
func (f Faults) Total() float64 {
	return f.RateLimited + f.ServerError + f.Hang + f.Truncate + f.Malformed
}

func rateOr(v, def float64) float64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	case v > 1:
		return 1
	}
	return v
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }

// withDefaults resolves zero values and copies Answers with trimmed keys.
func (c Config) withDefaults() Config {
	c.CorrectRate = rateOr(c.CorrectRate, 0.6)
	c.LengthRate = rateOr(c.LengthRate, 0.02)
	c.InvalidRate = rateOr(c.InvalidRate, 0.03)
	c.Latency = max(c.Latency, 0)
	f := &c.Faults
	f.RateLimited, f.ServerError, f.Hang = clamp01(f.RateLimited), clamp01(f.ServerError), clamp01(f.Hang)
	f.Truncate, f.Malformed = clamp01(f.Truncate), clamp01(f.Malformed)
	if t := f.Total(); t > 1 {
		f.RateLimited, f.ServerError, f.Hang = f.RateLimited/t, f.ServerError/t, f.Hang/t
		f.Truncate, f.Malformed = f.Truncate/t, f.Malformed/t
	}
	if f.RetryAfter <= 0 {
		f.RetryAfter = time.Second
	}
	if f.HangMax <= 0 {
		f.HangMax = 30 * time.Second
	}
	c.BatchTurnaround = max(c.BatchTurnaround, 0)
	c.BatchRowFailRate = clamp01(c.BatchRowFailRate)
	if c.BatchMaxRequests <= 0 {
		c.BatchMaxRequests = DefaultBatchMaxRequests
	}
	if c.BatchMaxBytes <= 0 {
		c.BatchMaxBytes = DefaultBatchMaxBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	answers := make(map[string]string, len(c.Answers))
	for p, a := range c.Answers {
		answers[strings.TrimSpace(p)] = strings.TrimSpace(a)
	}
	c.Answers = answers
	return c
}

// LoadAnswers reads a JSONL file of objects with "problem" and "answer"
// fields (an answer may be a JSON string or number). Lines without both, and
// blank lines, are skipped; the first answer for a problem wins.
func LoadAnswers(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llmtest: loading answers: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &row); err != nil {
			return nil, fmt.Errorf("llmtest: loading answers: %s line %d: %w", path, line, err)
		}
		problem, okP := jsonScalar(row["problem"])
		answer, okA := jsonScalar(row["answer"])
		problem, answer = strings.TrimSpace(problem), strings.TrimSpace(answer)
		if !okP || !okA || problem == "" || answer == "" {
			continue
		}
		if _, dup := out[problem]; !dup {
			out[problem] = answer
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("llmtest: loading answers: reading %s: %w", path, err)
	}
	return out, nil
}

// jsonScalar returns a JSON string's value or a number's literal text.
func jsonScalar(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), true
	}
	return "", false
}
