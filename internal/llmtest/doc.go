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
//     exactly the verdicts they ask for (tests predict them).
//   - repair conversations of any of the above: a well-formed answer.
//
// Anything else gets a 400 with an OpenAI error envelope. GET /v1/models
// lists the model "simulated".
//
// # Determinism and faults
//
// A response's content is a pure function of the request (model, messages,
// seed, n, sampling parameters) and the [Config]. Faults (429 with
// Retry-After, 500, hung requests, truncated bodies, malformed output) are
// drawn per attempt from a per-server counter mixed with the request hash, so
// a retry of the same request can succeed. Latency applies to every request
// and respects the request context.
package llmtest
