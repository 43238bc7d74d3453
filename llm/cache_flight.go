package llm

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// flights are the live requests in flight, by identity, so that identical
// requests made at once are sent once: the first leads, the others wait
// for its answer.
type flights struct {
	mu sync.Mutex
	m  map[cache.Identity]*flight
	// onWait, when set (by tests), is called when a request starts waiting
	// for another's flight.
	onWait func(cache.Identity)
}

type flight struct {
	done chan struct{}
	resp *Response // a private copy of the leader's
	err  error
}

// join returns id's flight and whether the caller leads it.
func (fs *flights) join(id cache.Identity) (*flight, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.m[id]; ok {
		return f, false
	}
	if fs.m == nil {
		fs.m = make(map[cache.Identity]*flight)
	}
	f := &flight{done: make(chan struct{})}
	fs.m[id] = f
	return f, true
}

// land ends id's flight with its leader's outcome.
func (fs *flights) land(id cache.Identity, f *flight, resp *Response, err error) {
	if resp != nil {
		f.resp = sharedResponse(resp)
	}
	f.err = err
	fs.mu.Lock()
	delete(fs.m, id)
	fs.mu.Unlock()
	close(f.done)
}

// sharedResponse is resp as another caller of the same request gets it: a
// cache hit, which sent and charged nothing.
func sharedResponse(resp *Response) *Response {
	return &Response{
		Choices:          slices.Clone(resp.Choices),
		PromptTokens:     resp.PromptTokens,
		CompletionTokens: resp.CompletionTokens,
		Cached:           true,
	}
}

// fromCache answers req from the cache, or waits for an identical request
// already in flight and shares its answer. Otherwise it returns the flight
// the caller now leads: the caller sends the request and lands the flight
// with the outcome.
func (c *Client) fromCache(ctx context.Context, req *Request, stage string, id cache.Identity, n int) (*Response, *flight, error) {
	for {
		f, lead := c.flights.join(id)
		if lead {
			// Checked after joining: an identical request that landed just
			// before is in the cache by now.
			resp, err := c.cacheHit(ctx, req, stage, id, n)
			if resp != nil || err != nil {
				c.flights.land(id, f, resp, err)
				return resp, nil, err
			}
			return nil, f, nil
		}
		if c.flights.onWait != nil {
			c.flights.onWait(id)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, nil, &Error{Class: ClassCanceled, Stage: stage, Model: req.Model, Reason: "canceled", Err: context.Cause(ctx)}
		}
		var e *Error
		switch {
		case f.resp != nil:
			c.meter.hit(stage)
			return sharedResponse(f.resp), nil, nil
		case f.err == nil || errors.As(f.err, &e) && e.Class == ClassCanceled:
			continue // the leader stopped without an answer: ask again
		case errors.As(f.err, &e):
			cp := *e
			cp.Stage = stage
			return nil, nil, &cp
		default:
			return nil, nil, f.err
		}
	}
}

// cacheHit looks req up in the cache. A read failure is a miss; a failure
// to copy a base cache's answer into the run's cache is fatal.
func (c *Client) cacheHit(ctx context.Context, req *Request, stage string, id cache.Identity, n int) (*Response, error) {
	raw, ok, err := c.cache.Get(id)
	switch {
	case errors.Is(err, cache.ErrWrite):
		c.meter.attemptError(stage, "cache_write")
		return nil, cacheWriteError(req, stage, 0, err)
	case err != nil:
		c.log.WarnContext(ctx, "llm: cache read failed; asking the server", "stage", stage, "error", err)
	case ok:
		d, err := decodeResponse(raw, n)
		if err == nil {
			c.meter.hit(stage)
			return &Response{Choices: d.choices, PromptTokens: d.promptTokens, CompletionTokens: d.completionTokens, Cached: true}, nil
		}
		c.log.DebugContext(ctx, "llm: ignoring unusable cache entry", "stage", stage, "cache_key", id.String(), "error", err)
	}
	return nil, nil
}

// cacheWriteError is the fatal error of a response that could not be made
// durable: after a failed write or fsync nothing more can be trusted to
// the cache, so the run must stop.
func cacheWriteError(req *Request, stage string, attempts int, err error) *Error {
	return &Error{Class: ClassFatal, Attempts: attempts, Stage: stage, Model: req.Model, Reason: "cache_write", Err: err}
}
