// Package llmtest is a simulated OpenAI-compatible chat-completions endpoint
// for tests, the demo and benchmarks. It is not a model: it recognizes the
// pipeline's own prompt templates from the rendered messages and answers each
// one in its contract with plausible, deterministic text.
//
// # What it answers
//
//   - rollout: a "### Step N:" solution whose final answer is correct at a
//     configurable rate, looked up in [Config.Answers]; correct answers come in
//     varied but equivalent notations, wrong ones are clearly different.
//   - distill_srar: <<SUGGEST>>/<<PITFALL>>/<<BONUS>>/<<ANSWER>> rubric lines.
//   - distill_factual_process: a JSON array of weighted Factual/Process criteria.
//   - judge_item, judge_batch: validity verdicts, deterministic per item.
//   - satisfy: per-item satisfaction and step, correlated with whether the
//     graded final answer is correct, with some noise items; or, when the
//     solution carries [SatisfiedMarker] or [JudgeFailsMarker] markers,
//     exactly the verdicts they ask for (tests predict them). Steps are
//     named as a model reading the prompt names them: by the <step n="K">
//     tags the satisfy template wraps steps in, else by the number written
//     in each "### Step N:" header, never by counting headers.
//   - score_grounded (seed 001's grounded reward judge): a score per
//     criterion id from the share of the criterion's keywords and required
//     elements the response mentions, or exactly what a [ScoresMarker] in
//     the response asks for; malformed attempts make the mistakes real
//     judges make with that contract (ids replaced by list numbers, a total
//     as a fraction, a score over its weight, a criterion left out).
//   - grounded_analyze, grounded_synthesize, grounded_enrich,
//     grounded_judge_batch, grounded_judge_item, grounded_answer (the
//     grounded style's stages): an analysis naming the passage's frequent
//     terms, K questions with 5-10 criteria built from them (some thin, one
//     passage in twenty with a question copying the passage), completions
//     of exactly the criteria shown, verdicts deterministic per criterion,
//     and closed-book answers that differ from sample to sample; see
//     grounded_gen.go.
//   - repair conversations of any of the above: a well-formed answer.
//
// Anything else gets a 400 with an OpenAI error envelope. GET /v1/models
// lists the model "simulated". Other paths get vLLM's 404
// ({"detail":"Not Found"}), so a base URL without /v1 fails as it would
// against vLLM. A rollout for a problem not in [Config.Answers] is
// reported once through Config.Logger and then only counted
// ([Server.UnknownProblems]).
//
// # Determinism and faults
//
// A response's content is a pure function of the request (model, messages,
// seed, n, sampling parameters) and the [Config]. Faults (429 with
// Retry-After, 500, hung requests, truncated bodies, malformed output) are
// drawn per attempt from a per-server counter mixed with the request hash, so
// a retry of the same request can succeed. Latency applies to every request
// and respects the request context.
//
// # Rate limits
//
// [Config.LimitRPM] and [Config.LimitTPM] set a server-side limit enforced
// like OpenAI's: token buckets holding one minute's allowance, refilled
// continuously, charged the prompt plus completion tokens of each reply.
// Beyond them a request gets 429 with Retry-After and retry-after-ms; while
// a limit is set every response carries x-ratelimit-limit-*,
// x-ratelimit-remaining-* and x-ratelimit-reset-* for requests and tokens,
// with reset times formatted as OpenAI does ("1s", "6m0s", "120ms").
package llmtest
