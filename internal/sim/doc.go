// Package sim is a simulated OpenAI-compatible chat-completions endpoint,
// with a simulated Files and Batch API, for tests, the demo and benchmarks. It is not a model: it recognizes the
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
//     grounded_judge_batch, grounded_judge_item, grounded_answer,
//     grounded_answer_open (the grounded style's stages): an analysis of the document shown (its
//     beginning and outline) naming its frequent terms, K questions with
//     5-10 criteria built from the passage's terms and the analysis's
//     concepts (some thin, one passage in twenty with a question copying
//     the passage), enrichment of exactly the criteria shown, each given
//     one of the analysis's concepts, verdicts deterministic per criterion,
//     closed-book answers that differ from sample to sample, and open-book
//     answers (the passage shown) that mention every term a closed-book one
//     can and a random share of the passage's own, so the judge scores the
//     passage-grounded criteria higher on them; see grounded_gen.go.
//   - repair conversations of any of the above: a well-formed answer.
//
// With [Config.ContextTokens] set, an online request whose prompt and
// max_tokens exceed it gets vLLM's 400 "maximum context length" error.
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
// # Files and Batch API
//
// The server also simulates OpenAI's Files and Batch API, in OpenAI's wire
// format, for the pipeline's batch mode: POST /v1/files (multipart fields
// purpose "batch" and file), GET and DELETE /v1/files/{id}, GET
// /v1/files/{id}/content; POST /v1/batches (endpoint /v1/chat/completions,
// completion_window 24h, metadata), GET /v1/batches/{id}, POST
// /v1/batches/{id}/cancel, and GET /v1/batches?limit=N&after=ID (newest
// first). Uploads stream to disk under [Config.BatchDir] and are never held
// in memory; one over [Config.BatchMaxBytes], or cut short, gets a 400 and
// leaves no file. Nothing persists beyond the Server: [Server.Close] removes
// the files.
//
// A batch is validated first (status "validating"): a line that is not a
// JSON object, a missing or duplicate custom_id, a method other than POST,
// a url other than the batch's endpoint, a second model, or more than
// [Config.BatchMaxRequests] lines make it "failed", with errors naming the
// line (OpenAI's codes: invalid_json_line, duplicate_custom_id,
// url_mismatch, model_mismatch, too_many_tasks, empty_file, ...). Then its
// rows are answered in order, streaming from the input file to an output
// file on disk, evenly over [Config.BatchTurnaround], so that
// request_counts.completed grows while the batch is "in_progress". Each row
// is answered by the code that answers an online request: a row's body is
// byte for byte the online reply to the same request, Malformed faults
// included (drawn as online; with [Config.FaultsByRequest] a request's
// first answer is the same online and in a batch). A batch has no latency,
// rate limit, 429, hang or truncation; instead a row fails with a 500 in
// the error file at [Config.BatchRowFailRate], drawn per row and batch, so a
// resubmitted row can succeed (with the reply it would have had). The first
// [Config.BatchExpire] batches created expire after answering the first half
// of their rows; a cancelled batch goes "cancelling", then "cancelled"; the
// rows either left unanswered are in the error file as batch_expired or
// batch_cancelled, and the rows answered before are in the output file. An
// output or error file exists only when it has rows.
//
// [Server.BatchStats] counts files, batches by status and rows by outcome,
// and the requests answered more than once online or in batches (each one
// paid twice); [Server.TimesAnswered] and [Server.CustomIDAnswers] count a
// single request or custom_id.
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
package sim
