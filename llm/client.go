package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/llm/internal/bufpool"
	openai "github.com/sashabaranov/go-openai"
)

// Endpoint is an OpenAI-compatible server. Its String, GoString, Format
// and LogValue methods never show the key.
type Endpoint struct {
	BaseURL string // including /v1, e.g. http://localhost:8000/v1
	APIKey  string // empty: no Authorization header (vLLM without --api-key)
}

func (e Endpoint) String() string {
	key := "none"
	if e.APIKey != "" {
		key = "[REDACTED]"
	}
	return fmt.Sprintf("Endpoint{BaseURL: %s, APIKey: %s}", redactURL(e.BaseURL), key)
}

// GoString keeps %#v from printing the key.
func (e Endpoint) GoString() string { return e.String() }

// Format keeps every fmt verb from printing the key.
func (e Endpoint) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, e.String()) } // fmt keeps the error

// LogValue keeps slog from printing the key.
func (e Endpoint) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", redactURL(e.BaseURL)), slog.Bool("api_key_set", e.APIKey != ""))
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// Options tune a Client. Zero values select the defaults.
type Options struct {
	MaxInFlight       int     // cap on attempts in flight; default 64
	RequestsPerMinute float64 // 0 = unlimited
	TokensPerMinute   float64 // 0 = unlimited; see the package doc
	// AttemptTimeout is the longest an attempt may run; default 10m. Each
	// stage learns a shorter deadline from its own latencies (see the
	// package doc), never below AttemptTimeoutFloor (default 10s).
	AttemptTimeout      time.Duration
	AttemptTimeoutFloor time.Duration
	// MaxResponseBytes caps a response body; a longer one fails its
	// request permanently (reason "too_large"). Default 64 MiB.
	MaxResponseBytes int64
	MaxAttempts      int           // default 6
	BackoffBase      time.Duration // default 500ms
	BackoffMax       time.Duration // default 60s; also caps Retry-After
	Logger           *slog.Logger  // nil = discard
	// HTTPClient nil = a client whose transport keeps MaxInFlight idle
	// connections per host, allows 2×MaxInFlight connections per host,
	// and has no overall timeout (AttemptTimeout bounds each attempt).
	HTTPClient *http.Client
	// LegacyMaxTokens sends Request.MaxTokens as max_tokens instead of
	// max_completion_tokens, for servers that predate the latter.
	// OpenAI's reasoning models accept only max_completion_tokens.
	LegacyMaxTokens bool
	// Defer, when set, takes every request the cache cannot answer
	// instead of sending it (batch mode; see Batcher): Chat then returns
	// the Deferrer's error, ClassDeferred while a batch will answer.
	Defer Deferrer
}

func (o *Options) fill() error {
	if o.MaxInFlight < 0 || o.MaxAttempts < 0 || o.AttemptTimeout < 0 || o.BackoffBase < 0 || o.BackoffMax < 0 ||
		o.AttemptTimeoutFloor < 0 || o.MaxResponseBytes < 0 || o.RequestsPerMinute < 0 || o.TokensPerMinute < 0 ||
		math.IsNaN(o.RequestsPerMinute) || math.IsNaN(o.TokensPerMinute) {
		return errors.New("llm: negative or NaN option")
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 64
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = 10 * time.Minute
	}
	if o.AttemptTimeoutFloor == 0 {
		o.AttemptTimeoutFloor = 10 * time.Second
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = 64 << 20
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 6
	}
	if o.BackoffBase == 0 {
		o.BackoffBase = 500 * time.Millisecond
	}
	if o.BackoffMax == 0 {
		o.BackoffMax = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat completion to make.
type Request struct {
	Stage    string // accounting key ("rollout", "distill", "judge", "satisfy"); not sent, not in the cache key
	Model    string
	Messages []Message
	// Temperature nil leaves the server's default. 0 is sent as
	// math.SmallestNonzeroFloat32 (~1.4e-45), because go-openai omits a
	// float32 0; servers treat it as greedy (vLLM: below 1e-5). TopP
	// likewise.
	Temperature *float64
	TopP        *float64
	MaxTokens   int // 0 = server default; sent as max_completion_tokens (see Options.LegacyMaxTokens)
	N           int // choices per request; 0 means 1
	Seed        *int64
	SampleIndex int  // distinguishes otherwise identical requests in the cache key; not sent
	JSON        bool // response_format {"type":"json_object"}
	// Online sends the request even when the Client defers requests to
	// batches (Options.Defer); not sent, not in the cache key.
	Online bool
	// Scope is extra cache-key material of a judge's request (see Scope);
	// not sent. The zero Scope adds nothing to the key.
	Scope Scope
}

func (r *Request) validate() error {
	switch {
	case r.Model == "":
		return fmt.Errorf("%w: no model", ErrInvalidRequest)
	case len(r.Messages) == 0:
		return fmt.Errorf("%w: no messages", ErrInvalidRequest)
	case r.N < 0:
		return fmt.Errorf("%w: n = %d", ErrInvalidRequest, r.N)
	case r.MaxTokens < 0:
		return fmt.Errorf("%w: max tokens = %d", ErrInvalidRequest, r.MaxTokens)
	case !validFloat(r.Temperature):
		return fmt.Errorf("%w: temperature must be finite and >= 0", ErrInvalidRequest)
	case !validFloat(r.TopP):
		return fmt.Errorf("%w: top_p must be finite and >= 0", ErrInvalidRequest)
	}
	return nil
}

func validFloat(f *float64) bool {
	return f == nil || (*f >= 0 && !math.IsInf(*f, 0) && !math.IsNaN(*f))
}

// Choice is one generated answer.
type Choice struct {
	Index        int
	Content      string
	Reasoning    string // vLLM `reasoning`, or `reasoning_content` of older servers
	FinishReason string // "stop", "length" (truncated), ...
}

// Response is the result of Chat.
type Response struct {
	Choices []Choice // sorted by Index, exactly max(N, 1) of them
	// Token counts as the server reported them. For a cache hit they are
	// the counts of the original response, and nothing is charged.
	PromptTokens, CompletionTokens int64
	Cached                         bool
	Attempts                       int     // live attempts made; 0 for a cache hit
	CostUSD                        float64 // charged to the meter by this call; 0 for a cache hit
}

// Client sends chat completions to one endpoint. It is safe for
// concurrent use; create one per endpoint and share it.
type Client struct {
	doer    captureDoer
	chatURL string // the base URL + /chat/completions
	auth    string // the Authorization header; empty without a key
	httpc   *http.Client
	red     redactor
	opt     Options
	cache   *cache.Cache
	meter   *Meter
	ctrl    *controller
	dl      *deadlines
	log     *slog.Logger
	// flights lets identical requests made at once be sent once.
	flights flights
	// out are the attempts sent and not yet answered.
	out sending
}

// NewClient returns a Client for ep. responses (the response cache) and
// meter may be nil (no caching; a private meter with no prices and no
// budget).
func NewClient(ep Endpoint, opt Options, responses *cache.Cache, meter *Meter) (*Client, error) {
	u, err := url.Parse(ep.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: endpoint base URL %s: want http(s)://host[:port]/v1", redactURL(ep.BaseURL))
	}
	if strings.ContainsFunc(ep.APIKey, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, errors.New("llm: API key contains spaces or control characters")
	}
	if err := opt.fill(); err != nil {
		return nil, err
	}
	if meter == nil {
		meter = NewMeter(nil, Budget{})
	}
	httpc := opt.HTTPClient
	if httpc == nil {
		httpc = &http.Client{Transport: NewTransport(opt.MaxInFlight)}
	}
	auth := ""
	if ep.APIKey != "" {
		auth = "Bearer " + ep.APIKey
	}
	return &Client{
		doer:    captureDoer{c: httpc, maxBody: opt.MaxResponseBytes, bodies: new(bufpool.Pool)},
		chatURL: strings.TrimRight(ep.BaseURL, "/") + chatPath,
		auth:    auth,
		httpc:   httpc,
		red:     redactor{key: ep.APIKey},
		opt:     opt,
		cache:   responses,
		meter:   meter,
		ctrl:    newController(opt.MaxInFlight, opt.RequestsPerMinute, opt.TokensPerMinute),
		dl:      newDeadlines(opt.AttemptTimeoutFloor, opt.AttemptTimeout),
		log:     opt.Logger,
	}, nil
}

// Close closes idle connections. It does not close the cache.
func (c *Client) Close() { c.httpc.CloseIdleConnections() }

// InFlightLimit is the current adaptive cap on attempts in flight.
func (c *Client) InFlightLimit() int { return c.ctrl.currentLimit() }

// Admit waits until this client can take more work: until the attempts
// waiting for a slot, plus those that earlier admissions are about to send,
// are fewer than the client may have in flight. It then counts weight
// attempts as about to be sent, each until a request made under the
// returned context asks for a slot, or until done is called. Call done
// when the admitted work ends (it may send fewer, say when the cache
// answers).
// Admitting work this way keeps the slots busy without a pile of requests
// that only wait, each holding a goroutine and its messages. Callers are
// let in first come, first served.
func (c *Client) Admit(ctx context.Context, weight int) (admitted context.Context, done func(), err error) {
	a, err := c.ctrl.admit(ctx, weight)
	if err != nil {
		return nil, nil, err
	}
	return context.WithValue(ctx, admissionKey{}, a), a.settle, nil
}

// Chat answers req from the cache, or sends it, retrying transient
// failures. Errors are *Error; see the package doc for their classes.
func (c *Client) Chat(ctx context.Context, req Request) (resp *Response, err error) {
	stage := req.Stage
	if stage == "" {
		stage = "default"
	}
	fail := func(class Class, reason string, attempts, status int, err error) *Error {
		return &Error{Class: class, Status: status, Attempts: attempts, Stage: stage, Model: req.Model, Reason: reason, Err: c.red.sanitize(err)}
	}
	if err := req.validate(); err != nil {
		return nil, fail(ClassFatal, "invalid_request", 0, 0, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(ClassCanceled, "canceled", 0, 0, context.Cause(ctx))
	}
	n := max(req.N, 1)

	var id cache.Identity
	if c.cache != nil {
		id = IdentityOf(req)
		if c.opt.Defer != nil && !req.Online {
			return c.deferUnlessCached(ctx, &req, stage, id, n)
		}
	}
	return c.online(ctx, &req, stage, id, n)
}

// online answers req from the cache, or sends it.
func (c *Client) online(ctx context.Context, req *Request, stage string, id cache.Identity, n int) (resp *Response, err error) {
	if c.cache != nil {
		hit, f, ferr := c.fromCache(ctx, req, stage, id, n)
		if f == nil {
			return hit, ferr
		}
		defer func() { c.flights.land(id, f, resp, err) }()
	}
	return c.live(ctx, req, stage, id, n)
}

// deferUnlessCached answers req from the cache, or hands it to the
// Deferrer.
func (c *Client) deferUnlessCached(ctx context.Context, req *Request, stage string, id cache.Identity, n int) (*Response, error) {
	if resp, err := c.cacheHit(ctx, req, stage, id, n); resp != nil || err != nil {
		return resp, err
	}
	wire := c.wireRequest(req)
	body := wireBody(&wire)
	est := estimateTokens(req)
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content) + len(m.Role)
	}
	err := c.opt.Defer.Defer(ctx, DeferredRequest{
		Stage: stage, Model: req.Model, ID: id, N: n, Body: body, PromptTokens: chars / 4, CompletionTokens: est - chars/4,
	})
	var pilot *pilotRequest
	if errors.As(err, &pilot) {
		defer pilot.done()
		return c.online(ctx, req, stage, id, n)
	}
	if errors.Is(err, errAnsweredMeanwhile) {
		if resp, err := c.cacheHit(ctx, req, stage, id, n); resp != nil || err != nil {
			return resp, err
		}
		return nil, &Error{Class: ClassPermanent, Stage: stage, Model: req.Model, Reason: "unusable",
			Err: errors.New("a batch's answer to this request is in the cache but does not decode")}
	}
	return nil, err
}

// keep writes a good answer to the cache before its slot is freed; durable
// waits for it to be durable.
func (c *Client) keep(cl *call, r *attemptResult) (durable func() error, err error) {
	if c.cache == nil {
		return nil, nil
	}
	u := cache.Usage{Stage: cl.stage, Model: cl.req.Model, PromptTokens: r.decoded.promptTokens, CompletionTokens: r.decoded.completionTokens}
	return c.cache.PutWritten(cl.id, r.raw, u)
}

// succeed charges a good answer and returns it; an answer that could not
// be made durable fails the run.
func (c *Client) succeed(cl *call, r *attemptResult, attempt int) (*Response, error) {
	if r.keepErr == nil && r.kept != nil {
		r.keepErr = r.kept()
	}
	d := r.decoded
	finish := make([]string, len(d.choices))
	for i, ch := range d.choices {
		finish[i] = ch.FinishReason
	}
	cost := c.meter.success(cl.stage, cl.req.Model, d.promptTokens, d.completionTokens, finish)
	if r.keepErr != nil {
		c.meter.attemptError(cl.stage, "cache_write")
		return nil, cacheWriteError(cl.req, cl.stage, attempt, r.keepErr)
	}
	return &Response{
		Choices:          d.choices,
		PromptTokens:     d.promptTokens,
		CompletionTokens: d.completionTokens,
		Attempts:         attempt,
		CostUSD:          cost,
	}, nil
}

func (c *Client) wireRequest(req *Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	o := openai.ChatCompletionRequest{Model: req.Model, Messages: msgs}
	if req.Temperature != nil {
		o.Temperature = wireFloat(*req.Temperature)
	}
	if req.TopP != nil {
		o.TopP = wireFloat(*req.TopP)
	}
	if req.MaxTokens > 0 {
		if c.opt.LegacyMaxTokens {
			//lint:ignore SA1019 max_tokens is what Options.LegacyMaxTokens asks for, for servers that predate max_completion_tokens
			o.MaxTokens = req.MaxTokens
		} else {
			o.MaxCompletionTokens = req.MaxTokens
		}
	}
	if req.N > 1 {
		o.N = req.N
	}
	if req.Seed != nil {
		s := int(*req.Seed)
		o.Seed = &s
	}
	if req.JSON {
		o.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return o
}

// wireFloat converts a sampling value for go-openai, whose float32
// fields are omitted when 0: a requested 0 becomes the smallest positive
// float32, which servers treat as 0.
func wireFloat(v float64) float32 {
	if f := float32(v); f != 0 {
		return f
	}
	return math.SmallestNonzeroFloat32
}

// estimateTokens guesses an attempt's token use for the TPM limiter:
// prompt characters/4 plus, per choice, MaxTokens or 1024.
func estimateTokens(req *Request) int {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content) + len(m.Role)
	}
	out := req.MaxTokens
	if out == 0 {
		out = 1024
	}
	return chars/4 + max(req.N, 1)*out
}

// requestWriteBuffer is the size of a connection's write buffer: a request
// of up to about this size (its headers and body; a grounded prompt is 3-6
// KB) leaves in one write system call instead of net/http's default 4 KB,
// which split most requests in two. It costs 12 KB more a connection.
const requestWriteBuffer = 16 << 10

// NewTransport is the HTTP transport a Client makes for itself when
// Options.HTTPClient is nil: it keeps maxInFlight idle connections to an
// endpoint, so that a steady load does not redial, and writes a usual
// request to the connection at once.
func NewTransport(maxInFlight int) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = max(100, 2*maxInFlight)
	tr.MaxIdleConnsPerHost = maxInFlight
	tr.MaxConnsPerHost = 2 * maxInFlight
	tr.ResponseHeaderTimeout = 0 // non-streaming: headers come when generation ends
	tr.WriteBufferSize = requestWriteBuffer
	return tr
}
