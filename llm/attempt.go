package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/llm/internal/bufpool"
	openai "github.com/sashabaranov/go-openai"
)

// call is one live request to make: what is sent, and what its attempts
// have learned so far.
type call struct {
	req   *Request
	stage string
	id    cache.Identity // the cache key; zero without a cache
	n     int            // choices expected
	wire  openai.ChatCompletionRequest
	body  []byte // wire's JSON, sent by every attempt
	est   int    // token estimate for the TPM limiters
	cuts  int    // attempts cut by a learned deadline
	sent  bool   // an attempt has gone out: the request is counted
	red   redactor
}

func (cl *call) fail(class Class, reason string, attempts, status int, err error) *Error {
	return &Error{Class: class, Status: status, Attempts: attempts, Stage: cl.stage, Model: cl.req.Model, Reason: reason, Err: cl.red.sanitize(err)}
}

// live sends req until an attempt succeeds, a failure is final, the
// budget is spent or ctx ends.
func (c *Client) live(ctx context.Context, req *Request, stage string, id cache.Identity, n int) (*Response, error) {
	cl := &call{req: req, stage: stage, id: id, n: n, wire: c.wireRequest(req), est: estimateTokens(req), red: c.red}
	cl.body = wireBody(&cl.wire)
	for attempt := 1; ; attempt++ {
		if c.meter.Exhausted() {
			c.meter.attemptError(stage, "budget")
			if cl.sent {
				c.meter.failure(stage)
			}
			return nil, cl.fail(ClassBudget, "budget", attempt-1, 0, ErrBudgetExhausted)
		}
		res := c.attempt(ctx, cl)
		if res.err == nil && res.waitErr == nil && res.budgetErr == nil {
			resp, err := c.succeed(cl, &res, attempt)
			res.release() // once succeed has charged what it spent
			if err == nil {
				c.doer.bodies.Put(res.raw) // decoded into resp and copied into the cache
			}
			return resp, err
		}
		res.release()
		switch {
		case res.budgetErr != nil:
			c.meter.attemptError(stage, "budget")
			if cl.sent {
				c.meter.failure(stage)
			}
			return nil, cl.fail(ClassBudget, "budget", attempt-1, 0, res.budgetErr)
		case res.waitErr != nil:
			return nil, cl.fail(ClassCanceled, "canceled", attempt-1, 0, res.waitErr)
		case ctx.Err() != nil:
			return nil, cl.fail(ClassCanceled, "canceled", attempt, res.status, context.Cause(ctx))
		}
		class, reason := classify(res.err, res.status)
		c.meter.attemptError(stage, reason)
		if class != ClassRetryable || attempt >= c.opt.MaxAttempts {
			c.meter.failure(stage)
			return nil, cl.fail(class, reason, attempt, res.status, res.err)
		}
		wait := c.retryWait(attempt, res.header)
		c.log.LogAttrs(ctx, slog.LevelDebug, "llm: retrying",
			slog.String("stage", stage), slog.String("model", req.Model),
			slog.Int("status", res.status), slog.String("reason", reason),
			slog.Int("attempt", attempt), slog.Duration("wait", wait),
			slog.String("error", c.red.sanitize(res.err).Error()))
		c.meter.retry(stage)
		if err := sleep(ctx, wait); err != nil {
			return nil, cl.fail(ClassCanceled, "canceled", attempt, res.status, err)
		}
	}
}

// retryWait is how long to wait before the next attempt: the server's
// Retry-After when it gave one (capped at BackoffMax), else backoff. It
// delays only this request.
func (c *Client) retryWait(attempt int, h http.Header) time.Duration {
	if ra, ok := retryAfter(h, time.Now()); ok {
		return min(ra, c.opt.BackoffMax)
	}
	return backoff(attempt, c.opt.BackoffBase, c.opt.BackoffMax)
}

// attemptResult is what one attempt produced.
type attemptResult struct {
	raw     []byte      // the body, as received
	decoded decoded     // the body, decoded, when err is nil
	status  int         // HTTP status; 0 when none arrived
	header  http.Header // response headers, also on errors
	err     error       // the attempt's error
	waitErr error       // the context ended while waiting for a slot or the rate limiters
	// budgetErr: the attempt was not sent because its estimate would pass
	// the budget (wraps ErrBudgetExhausted).
	budgetErr error
	release   func() // ends the attempt's budget reservation; never nil
	keepErr   error  // a good answer could not be written to the cache, or made durable
	// kept waits until the answer written to the cache is durable; nil
	// without a cache or when the write failed.
	kept func() error
}

// attempt waits for a slot and the rate limiters, sends one request
// under the stage's deadline, decodes the answer, writes a good one to the
// cache, and tells the pacing what happened. The slot is held until the
// answer is written, so a killed process loses at most the slots' answers;
// succeed waits for the answer to be durable before anyone uses it.
func (c *Client) attempt(ctx context.Context, cl *call) attemptResult {
	noop := func() {}
	epoch, err := c.ctrl.acquire(ctx)
	if err != nil {
		return attemptResult{waitErr: err, release: noop}
	}
	defer c.ctrl.release()
	held, err := c.meter.gate.ReserveEstimate(ctx, func() Estimate { return c.budgetEstimate(cl) })
	if err != nil {
		if errors.Is(err, ErrBudgetExhausted) {
			return attemptResult{budgetErr: err, release: noop}
		}
		return attemptResult{waitErr: err, release: noop}
	}
	reserved, err := c.ctrl.waitRate(ctx, cl.est)
	if err != nil {
		held()
		return attemptResult{waitErr: err, release: noop}
	}
	deadline, learned := c.dl.forAttempt(cl.stage, cl.cuts)
	if !cl.sent {
		c.meter.request(cl.stage, cl.req.Model)
		cl.sent = true
	}
	start := time.Now()
	sent := c.out.add(cl.stage)
	r, cut := c.send(ctx, cl, deadline)
	sent()
	took := time.Since(start)
	if r.err == nil {
		r.decoded, r.err = c.decode(r.raw, cl.n)
	}
	if r.err == nil {
		c.ctrl.settle(reserved, r.decoded.promptTokens+r.decoded.completionTokens)
		c.dl.observe(cl.stage, took)
		r.kept, r.keepErr = c.keep(cl, &r)
	} else {
		c.ctrl.settle(reserved, -1)
	}
	if mayBeBilled(r.status, cut, r.err) {
		c.chargeLost(cl)
	}
	if cut && learned {
		cl.cuts++
	}
	c.learn(epoch, cl, &r, reserved, cut)
	r.release = held
	return r
}

// budgetEstimate is what one attempt of cl may spend, for the budget
// gate: its prompt at 3 bytes a token (more than most prompts take, so the
// estimate errs high), and the largest completion of the stage's answers
// over every session (at least their mean plus twice its standard error),
// or the request's max_tokens before the stage has any answer, or twice the
// largest completion of any stage, or +Inf (not known: the attempt waits
// until nothing else is in flight) before the run's first answer. Far from the
// budget the estimates change nothing; near it they stop the run while a
// request could still pass it.
func (c *Client) budgetEstimate(cl *call) Estimate {
	var chars int64
	for _, m := range cl.req.Messages {
		chars += int64(len(m.Content) + len(m.Role))
	}
	prompt := float64(chars/3 + 16)
	completion := math.Inf(1)
	if e := c.meter.completionEstimate(cl.stage); e.Answers > 0 {
		completion = max(e.Upper, e.Most)
	} else if cl.req.MaxTokens > 0 {
		completion = float64(cl.req.MaxTokens * max(cl.req.N, 1))
	} else if most := c.meter.largestCompletion(); most > 0 {
		completion = 2 * most
	}
	if math.IsInf(completion, 1) {
		return Estimate{CostUSD: math.Inf(1), Tokens: math.Inf(1)}
	}
	cost := c.meter.Cost(cl.req.Model, int64(prompt), int64(math.Ceil(completion)))
	return Estimate{CostUSD: cost, Tokens: prompt + completion}
}

// learn tells the controller how the attempt ended and what the server
// said about its rate limits.
func (c *Client) learn(epoch uint64, cl *call, r *attemptResult, reserved reservation, cut bool) {
	now := time.Now()
	if r.header != nil {
		requests, tokens := rateLimitHeaders(r.header)
		c.ctrl.paced.requests.observe(requests, reserved.requests, now)
		c.ctrl.paced.tokens.observe(tokens, reserved.learned, now)
	}
	o := outcomeOther
	switch {
	case r.status == http.StatusTooManyRequests:
		o = outcomeRateLimited
	case cut:
		o = outcomeTimeout
	case r.err == nil:
		o = outcomeOK
	}
	if limit, lowered := c.ctrl.record(epoch, o, now); lowered {
		c.log.Info("llm: server is rate limiting; lowering the in-flight limit", "model", cl.req.Model, "limit", limit)
	}
}

// send makes one HTTP request under deadline. cut reports that the
// deadline, not the caller, ended it.
func (c *Client) send(ctx context.Context, cl *call, deadline time.Duration) (r attemptResult, cut bool) {
	actx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	s := &sink{}
	err := c.post(context.WithValue(actx, sinkKey{}, s), &cl.wire, cl.body)
	r = attemptResult{raw: s.body, status: s.status, header: s.header, err: err}
	cut = err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
	if cut && !errors.Is(err, context.DeadlineExceeded) {
		r.err = fmt.Errorf("attempt deadline of %s passed: %w: %w", deadline, context.DeadlineExceeded, err)
	}
	return r, cut
}

// decode parses a 2xx body; errors other than the body's own carry a
// redacted excerpt of it.
func (c *Client) decode(raw []byte, n int) (decoded, error) {
	d, err := decodeResponse(raw, n)
	if err != nil && !errors.As(err, new(*bodyError)) {
		err = fmt.Errorf("%w (body: %q)", err, c.red.excerpt(raw))
	}
	return d, err
}

// sink receives the raw response of one attempt from captureDoer.
type sink struct {
	status int
	header http.Header
	body   []byte
}

type sinkKey struct{}

// errTooLarge marks a 2xx body longer than Options.MaxResponseBytes.
var errTooLarge = errors.New("response body too large")

// captureDoer is the client's HTTP path (see post). It reads each response
// body, up to maxBody bytes, into the request's sink, so Chat can cache the
// bytes as sent and read fields go-openai does not model, then hands post a
// copy (for a 2xx body, only "{}": Chat decodes the raw bytes itself).
type captureDoer struct {
	c       *http.Client
	maxBody int64
	bodies  *bufpool.Pool // the bodies read; live hands a good answer's back once it is decoded and cached
}

func (d captureDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if err != nil {
		return nil, err
	}
	s, _ := req.Context().Value(sinkKey{}).(*sink)
	if s == nil {
		return resp, nil
	}
	body, rerr := readAllSized(d.bodies, io.LimitReader(resp.Body, d.maxBody+1), resp.ContentLength)
	resp.Body.Close()
	ok := resp.StatusCode/100 == 2
	if int64(len(body)) > d.maxBody {
		body, rerr = body[:d.maxBody], nil
		if ok {
			s.status, s.header = resp.StatusCode, resp.Header
			return nil, fmt.Errorf("%w: longer than %d bytes (Options.MaxResponseBytes)", errTooLarge, d.maxBody)
		}
	}
	s.status, s.header, s.body = resp.StatusCode, resp.Header, body
	var r io.Reader = bytes.NewReader(body)
	switch {
	case rerr != nil:
		r = io.MultiReader(r, errReader{rerr})
	case ok:
		resp.Body, resp.ContentLength = capturedOK{strings.NewReader("{}")}, 2
		return resp, nil
	}
	resp.Body = io.NopCloser(r)
	return resp, nil
}

// capturedOK is the body captureDoer hands post for a 2xx answer it read
// whole: Chat decodes the captured bytes, so post has nothing to decode.
type capturedOK struct{ io.Reader }

func (capturedOK) Close() error { return nil }

// presizeMax bounds the buffer readAllSized allocates up front from a
// declared Content-Length: a server cannot make a request cost more memory
// than the bytes it actually sends, beyond this.
const presizeMax = 1 << 20

// readAllSized is io.ReadAll starting from a buffer the size of the
// declared body (Content-Length, -1 when unknown), so a body is read in one
// allocation instead of a series of regrowths and copies.
// A nil bp allocates the buffer; otherwise it comes from bp.
func readAllSized(bp *bufpool.Pool, r io.Reader, declared int64) ([]byte, error) {
	size := 512
	if declared >= 0 && declared < presizeMax {
		size = int(declared) + 1 // + 1: the read that sees EOF needs room
	}
	var b []byte
	if bp != nil {
		b = bp.Get(size)
	} else {
		b = make([]byte, 0, size)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
