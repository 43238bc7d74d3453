package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	openai "github.com/sashabaranov/go-openai"
)

// Class says what a caller should do about an error.
type Class int

const (
	// ClassRetryable errors are transient (429, 5xx, timeouts, resets,
	// truncated bodies). Chat has already retried them MaxAttempts times
	// when one reaches the caller; the row may be tried again later.
	ClassRetryable Class = iota + 1
	// ClassPermanent errors are about this request (400, 413, 422, a 200
	// body that is not a chat completion, a wrong choice count): record
	// the row as failed and go on.
	ClassPermanent
	// ClassFatal errors are about the run (401, 403, 404, invalid
	// requests, client-side validation): stop.
	ClassFatal
	// ClassCanceled means the caller's context ended: the run is stopping,
	// nothing failed.
	ClassCanceled
	// ClassBudget means the meter's budget is spent; see ErrBudgetExhausted.
	ClassBudget
	// ClassDeferred means the request went into a provider batch
	// (Options.Defer) instead of being sent: its answer comes into the
	// cache later, and the caller asks again then. Nothing failed.
	ClassDeferred
)

func (c Class) String() string {
	switch c {
	case ClassRetryable:
		return "retryable"
	case ClassPermanent:
		return "permanent"
	case ClassFatal:
		return "fatal"
	case ClassCanceled:
		return "canceled"
	case ClassBudget:
		return "budget"
	case ClassDeferred:
		return "deferred"
	default:
		return "class(" + strconv.Itoa(int(c)) + ")"
	}
}

// ErrBudgetExhausted is returned, wrapped in an *Error of ClassBudget,
// instead of sending a live request once the Meter's budget is spent.
// Cached answers are still served. Detect it with errors.Is.
var ErrBudgetExhausted = errors.New("llm: budget exhausted")

// ErrInvalidRequest is wrapped by errors about a Request that can never be
// sent (no model, no messages, negative counts, NaN sampling values).
var ErrInvalidRequest = errors.New("llm: invalid request")

// errMalformed marks a 2xx body that is not a usable chat completion.
var errMalformed = errors.New("response is not a chat completion")

// errChoiceCount marks a response with the wrong number of choices.
var errChoiceCount = errors.New("wrong number of choices")

// Error is the error Chat returns. Its text and everything it wraps are
// free of the API key: server bodies are cut to a short excerpt and
// redacted before they are stored.
type Error struct {
	Class    Class
	Status   int    // HTTP status of the last attempt; 0 when none was received
	Attempts int    // attempts made (0 when nothing was sent)
	Stage    string // Request.Stage
	Model    string // Request.Model
	Reason   string // short label, as counted in StageStats.ErrorsByReason
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm: chat completion")
	if e.Stage != "" || e.Model != "" {
		fmt.Fprintf(&b, " (stage %s, model %s)", e.Stage, e.Model)
	}
	switch e.Class {
	case ClassCanceled:
		b.WriteString(": stopped")
	case ClassBudget:
		b.WriteString(": not sent")
	default:
		fmt.Fprintf(&b, ": %s error", e.Class)
	}
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " after %d attempt", e.Attempts)
		if e.Attempts > 1 {
			b.WriteByte('s')
		}
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	switch {
	case e.Status == 404 && e.Reason == "batch_api":
		b.WriteString(" (the provider does not know the batch or file this names)")
	case e.Status == 404:
		b.WriteString(" (check the model name and that the base URL ends in /v1)")
	}
	// go-openai's own texts repeat the status and print nil causes;
	// show the server's message or body excerpt instead.
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(e.Err, &ae):
		b.WriteString(": ")
		b.WriteString(ae.Message)
		if ae.Type != "" {
			fmt.Fprintf(&b, " (type %s)", ae.Type)
		}
	case errors.As(e.Err, &re):
		b.WriteString(": body: ")
		b.Write(re.Body)
	case e.Err != nil:
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf classifies any error. For errors from Chat it returns their
// Class; otherwise it inspects the error itself. ClassOf(nil) is 0.
func ClassOf(err error) Class {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	if errors.Is(err, ErrBudgetExhausted) {
		return ClassBudget
	}
	if errors.Is(err, context.Canceled) {
		return ClassCanceled
	}
	c, _ := classify(err, 0)
	return c
}

// classify sorts an attempt's error, assuming the caller's context is
// still alive (Chat checks that first). status is the HTTP status seen by
// the transport, used when the error itself carries none.
func classify(err error, status int) (Class, string) {
	if s := statusOf(err); s != 0 {
		status = s
	}
	var be *bodyError
	if errors.As(err, &be) {
		return be.class, be.reason
	}
	if errors.Is(err, ErrInvalidRequest) {
		return ClassFatal, "invalid_request"
	}
	if errors.Is(err, errTooLarge) {
		return ClassPermanent, "too_large"
	}
	if status == 429 && quotaExhausted(err) {
		// OpenAI's "insufficient_quota" 429 is not a rate limit: no retry
		// passes until someone pays.
		return ClassFatal, "insufficient_quota"
	}
	if status >= 300 {
		return classifyStatus(status)
	}
	switch {
	case errors.Is(err, errChoiceCount):
		return ClassPermanent, "choice_count"
	case errors.Is(err, errMalformed):
		return ClassPermanent, "malformed"
	case errors.Is(err, context.DeadlineExceeded):
		return ClassRetryable, "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassRetryable, "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return ClassRetryable, "reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ClassRetryable, "truncated"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ClassRetryable, "timeout"
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return ClassPermanent, "malformed"
	}
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) {
		return ClassRetryable, "network"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// Transport failures without a typed cause, e.g. a malformed
		// HTTP response from a restarting server. (NewClient has already
		// rejected URLs that could never work.)
		return ClassRetryable, "network"
	}
	// Client-side sentinels of go-openai and anything unknown: a retry
	// would fail the same way.
	return ClassFatal, "client"
}

func classifyStatus(status int) (Class, string) {
	reason := strconv.Itoa(status)
	switch status {
	case 408, 425, 429, 500, 502, 503, 504:
		return ClassRetryable, reason
	case 401, 403, 404:
		return ClassFatal, reason
	case 501, 505:
		return ClassFatal, reason
	}
	if status >= 500 {
		return ClassRetryable, reason // proxies' 52x and friends
	}
	return ClassPermanent, reason
}

// quotaExhausted reports an OpenAI insufficient_quota error.
func quotaExhausted(err error) bool {
	const quota = "insufficient_quota"
	var ae *openai.APIError
	if errors.As(err, &ae) {
		code, _ := ae.Code.(string)
		return code == quota || ae.Type == quota
	}
	var re *openai.RequestError
	return errors.As(err, &re) && strings.Contains(string(re.Body), quota)
}

// statusOf returns the HTTP status carried by go-openai's error types.
// Both must be checked: flat vLLM bodies and non-JSON proxy pages arrive
// as *RequestError, which errors.As(*APIError) does not find.
func statusOf(err error) int {
	var ae *openai.APIError
	if errors.As(err, &ae) && ae.HTTPStatusCode != 0 {
		return ae.HTTPStatusCode
	}
	var re *openai.RequestError
	if errors.As(err, &re) && re.HTTPStatusCode != 0 {
		return re.HTTPStatusCode
	}
	return 0
}

// bodyError is an error reported inside a 2xx body ({"error": {...}}).
type bodyError struct {
	class  Class
	reason string
	msg    string
}

func (e *bodyError) Error() string { return "error in response body: " + e.msg }

// excerptLen bounds the server text kept in errors.
const excerptLen = 300

var (
	bearerRE = regexp.MustCompile(`(?i)(bearer\s+)[^\s"'<>,;}\]]+`)
	skRE     = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{6,}`)
)

// redactor removes a key, and anything shaped like a bearer token, from
// text that came from a server or a transport error.
type redactor struct{ key string }

func (r redactor) redact(s string) string {
	s = bearerRE.ReplaceAllString(s, "${1}[REDACTED]")
	s = skRE.ReplaceAllString(s, "sk-[REDACTED]")
	if len(r.key) >= 4 {
		s = strings.ReplaceAll(s, r.key, "[REDACTED]")
	}
	return s
}

// excerpt is a short, single-line, redacted rendering of a body.
func (r redactor) excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > excerptLen {
		s = s[:excerptLen]
		for len(s) > 0 && !isRuneStart(s[len(s)-1]) {
			s = s[:len(s)-1]
		}
		if len(s) > 0 {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return r.redact(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// sanitize returns err with every server-provided text it carries cut to
// an excerpt and redacted. go-openai's error types are replaced by
// redacted copies so errors.As still finds them; other errors keep their
// chain and get a redacted message.
func (r redactor) sanitize(err error) error {
	if err == nil {
		return nil
	}
	var ae *openai.APIError
	if errors.As(err, &ae) {
		c := *ae
		c.Message = r.excerpt([]byte(ae.Message))
		if ae.Param != nil {
			p := r.excerpt([]byte(*ae.Param))
			c.Param = &p
		}
		if s, ok := ae.Code.(string); ok {
			c.Code = r.excerpt([]byte(s))
		}
		c.InnerError = nil
		return &c
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		c := *re
		c.Body = []byte(r.excerpt(re.Body))
		if re.Err != nil {
			c.Err = r.sanitize(re.Err)
		}
		return &c
	}
	var be *bodyError
	if errors.As(err, &be) {
		c := *be
		c.msg = r.excerpt([]byte(be.msg))
		return &c
	}
	msg := err.Error()
	if red := r.redact(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// redactedError shows a redacted message. It answers errors.Is for the
// sentinels in its chain but does not hand out the chain itself, whose
// messages still hold the unredacted text.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
