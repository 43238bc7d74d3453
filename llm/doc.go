// Package llm talks to an OpenAI-compatible chat-completions endpoint
// (vLLM, SGLang, OpenAI): it retries transient failures, paces requests,
// answers from the response cache (package llm/cache), and counts tokens
// and cost against a budget.
//
// A run creates one [Meter] and one cache.Cache, and one [Client] per
// distinct [Endpoint]; every stage calls [Client.Chat].
//
// # Requests
//
// Requests are sent as go-openai's CreateChatCompletion sends them (its
// request type, client-side checks, URL, headers and error types), with
// the body written by the client itself, byte for byte what go-openai
// would marshal, once per request rather than per attempt, and an HTTP
// client that keeps each raw response body. Two go-openai habits are
// worked around: a float32 0 is omitted from the JSON, so a requested
// temperature or top_p of 0 is sent as math.SmallestNonzeroFloat32
// (servers treat it as greedy); and vendor fields such as vLLM's
// `reasoning` (earlier `reasoning_content`) are dropped, so responses are
// decoded from the raw bytes instead. Choices are returned sorted by
// index; a response with other than max(N, 1) choices is an error.
// MaxTokens is sent as max_completion_tokens, which vLLM, SGLang and
// OpenAI (including its reasoning models) accept; Options.LegacyMaxTokens
// sends max_tokens for older servers.
//
// # Errors
//
// Chat returns *[Error], whose [Class] says what to do:
//
//   - ClassRetryable: 408, 425, 429, 500, 502, 503, 504 (and other 5xx
//     except 501 and 505), per-attempt timeouts, refused or reset
//     connections, truncated bodies. Chat has already retried these
//     MaxAttempts times when one reaches the caller.
//   - ClassPermanent: a problem with this request: 400, 413, 422 and
//     other 4xx, a 2xx body that is not a chat completion, a wrong
//     choice count, a 2xx body longer than Options.MaxResponseBytes
//     (reason "too_large"). Record the row as failed.
//   - ClassFatal: a problem with the run: 401, 403, 404, an invalid
//     Request ([ErrInvalidRequest]), go-openai's client-side checks.
//   - ClassCanceled: the caller's context ended (also while waiting);
//     nothing failed. errors.Is(err, context.Canceled) works too.
//   - ClassBudget: the budget is spent; errors.Is(err, ErrBudgetExhausted).
//
// The caller's context is checked before an error is classified, so a
// cancellation is never retried. Error texts carry the status and a short
// excerpt of the server's body, never the API key: the key, and anything
// that looks like a bearer token, is redacted from everything the server
// sent back before it is stored in an error or logged.
//
// # Retries and rate control
//
// Retries wait with exponential backoff and full jitter (BackoffBase
// doubling up to BackoffMax), or for the server's Retry-After
// (retry-after-ms, seconds or an HTTP date), capped at BackoffMax. The
// wait delays only the request that got it: other requests keep flowing.
//
// Each Client paces its attempts with one controller:
//
//   - An adaptive cap on attempts in flight, lowered only on evidence of
//     a real limit: a burst of 429s, at least 8 that are also at least a
//     quarter of the last 64 attempts sent since the cap last changed.
//     Then it halves, and grows back by one after each window of as many
//     successes as the cap, up to MaxInFlight. Sporadic 429s (a few
//     percent) never lower it.
//   - Pacing learned from OpenAI's x-ratelimit-{limit,remaining,reset}-
//     {requests,tokens} headers, when the server sends them: a local token
//     bucket per limit, refilled at the announced limit per minute (or over
//     a longer window when the reset times show one, as for a daily
//     limit), never fuller than what the server last said remains. The
//     client so stays just under a server's limit without configuration.
//   - Optional configured limiters: RequestsPerMinute, and
//     TokensPerMinute, which reserves an estimate before each attempt
//     (prompt characters/4 plus MaxTokens, or 1024, per choice; capped at
//     one minute's allowance) and settles it against the usage the
//     response body reports. The learned token bucket is settled alike.
//
// Each attempt runs under a deadline learned per stage (Request.Stage)
// from the latencies of its successful attempts: 3 times the 99th
// percentile of the last 256, kept between AttemptTimeoutFloor and
// AttemptTimeout; until a stage has 20 samples, AttemptTimeout applies.
// An attempt cut by it counts as reason "timeout" and is retried with the
// deadline doubled per cut (up to AttemptTimeout), so a genuinely long
// request still finishes while a hung one costs a few normal latencies.
// [Client.Health] reports the cap and why it was last lowered, the 429s
// and timeouts of the last minute, the learned deadlines and limits.
//
// Waiting for a slot or a limiter ends when the context does. Slots go to
// the smallest [WithPriority] order first, then first come first served: a
// pipeline passes each problem's admission order, so the problems under
// way (their retries, their later stages) finish before newer ones start.
// A slot is held until its answer is written to the cache's log, so a
// killed process loses at most as many answers as there are slots (the
// kernel keeps what was written); the answer reaches its caller only once
// it is durable (synced), so nothing is built on an answer a power loss
// could take back.
//
// # Cache
//
// The response cache, package llm/cache, maps a request's identity
// ([IdentityOf]: its [CacheKey] and a SHA-256 digest of the same encoding,
// which a hit must match) to the raw response body and its usage. Only complete, well-formed responses with the right
// choice count are stored, and Chat returns only after the entry is
// durable; a failed cache write is a ClassFatal error. A hit sends nothing
// and charges nothing; it is served even when the budget is spent.
// Identical requests in flight at once are sent once. An entry that no
// longer decodes is treated as a miss and replaced; a reply that
// ChatParsed gave up on is marked unusable.
//
// # Accounting
//
// The [Meter] counts requests (when first sent, not while they wait for a
// slot), cache hits, retries, failures, failed
// attempts by reason, tokens and cost, by stage and in total, and prices
// responses by model (unknown models cost 0). Before each live attempt
// Chat checks [Meter.Exhausted], then reserves the attempt's estimated cost
// and tokens with the meter's [BudgetGate]: its prompt at 3 bytes a token
// and the largest completion of its stage's answers so far (the request's
// max_tokens before the first answer; not known, so sent alone, without
// either). An attempt that would pass the
// budget beside those in flight waits for them, and is refused with
// ErrBudgetExhausted when it would pass it alone, so requests in flight
// together do not overshoot the budget.
//
// # Batches
//
// A Client whose Options.Defer is set (batch mode) sends nothing itself:
// a request the cache cannot answer goes to the [Deferrer], and Chat
// returns an *Error of ClassDeferred. A [Batcher] is the Deferrer of a
// provider's Batch API: it writes the requests into input files (one per
// endpoint and model, split at MaxRequests and MaxBytes; custom_id is the
// CacheKey), uploads them, creates the batches, polls them, downloads
// their output and error files, and puts every answer into the cache
// (flagged as paid at the batch rate, Price.BatchRate, half by default),
// after which asking again is a cache hit. Each step is in a journal
// (BatchJournal) before anything waits on it: a killed run polls the
// batches it made, finds one it created but did not record by its input
// file (as does a create retried after its reply was lost), and never
// submits a row twice; a row that a batch failed with a 5xx, or left
// unanswered when it expired, goes into a later batch, up to
// MaxRowAttempts (a cancelled batch's unanswered rows do not count;
// ResetRowFailures starts every count again); a 4xx row fails its
// request. With OfflineDir the input files go to a directory for vLLM's
// run-batch instead, and the output files found there are imported. The
// budget is checked before each batch is submitted, against the projected
// cost of the open batches, their rows priced from the best estimate of
// their answers' length (the run's answers, a plan's, an online pilot of
// the stage; see batch_price.go), not from their max_tokens.
//
// # Endpoints that are down
//
// A [Streak] follows a caller's calls in a row that ran out of retries on
// transient errors: three in a row that could not connect mean nothing
// listens at the URL, fifty of any kind that the endpoint keeps failing.
// distill run and validate rejudge both stop on it.
//
// # Layout
//
// The response cache is its own package, llm/cache: a storage engine (its
// log format, index, compaction, merge and durability rules) that knows
// nothing of requests. It stores a cache.Identity; this package computes
// one from a Request (IdentityOf, CacheKey in key.go) and imports the
// cache, never the other way round. cache_flight.go is Chat's side of it
// (reading a hit, sending identical requests in flight once) and stays
// here. The byte-buffer pools both use are llm/internal/bufpool.
//
// Batch mode (batch*.go) stays in this package: it is made of the client's
// own parts, not a user of its API. Counted on this tree, batch*.go reaches
// into 19 unexported identifiers of the rest of the package: 13 functions
// and methods (classifyStatus and classify, which class an HTTP status or
// a transport error as Chat does; decodeResponse, Chat's decoder; the
// redactor's redact, sanitize and excerpt, which keep keys out of its
// errors, and redactURL; backoff, retryAfter and sleep, Chat's retry
// waits; Options.fill; the meter's completionEstimate, which prices a
// row, and batchAnswer, which charges one at the batch rate), the redactor
// type, and 5 fields (Meter.budget, redactor.key, and the decoded
// response's choices, promptTokens and completionTokens). The other way,
// Chat uses 3 of batch's own: errAnsweredMeanwhile, pilotRequest (by which
// a Batcher sends a pilot online) and reasonDeferred. As llm/batch all 22
// would be exported from llm for their one user. The smallest split keeps
// the Batch API's HTTP client here (batch_api.go, the main user of the 13
// functions) and moves the scheduler (batch.go, batch_journal.go,
// batch_run.go, batch_price.go, batch_wire.go: 1,820 lines); it still
// exports 10, 13 with the decoded response's 3 fields: decodeResponse,
// classifyStatus, completionEstimate, batchAnswer, the meter's budget,
// BatchObject.errorText, writeStream, and the 3 of the Client-Batcher
// handshake, which would make the private pilot and answered-meanwhile
// protocol part of the public Deferrer contract. That is an estimated 60
// lines of wrappers and their docs, and 4 of the 5 batch test files (887
// lines) are internal tests that use 5 of this package's test helpers and
// the Batcher's journal and state directly, so they would be split as
// well. It would be a wider API over the same coupling, not a small
// interface over a loose one, so batch mode stays here.
package llm
