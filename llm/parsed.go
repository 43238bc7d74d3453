package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// Ask is a request whose reply must parse.
type Ask struct {
	What    string // what the reply is, for errors: "rubric", "validity verdicts"
	Repairs int    // repair turns allowed after the first reply
	// Parse checks the first choice's content; its error is shown to the
	// model in the next repair turn.
	Parse func(reply string) error
	// Repair builds the conversation of the next turn from the one that
	// was sent, the reply that failed and the parser's error.
	Repair func(sent []Message, reply string, parseErr error) ([]Message, error)
	// OnResponse, when set, sees every response, cached or live, so the
	// caller can add up what a record cost.
	OnResponse func(*Response)
	// RepairsOnline sends the repair turns at once even when the Client
	// defers requests to batches, instead of in the next batch.
	RepairsOnline bool
	// KeepUnusable leaves the exchange of a reply that never parsed in the
	// cache, for a caller that keeps the failure as data (a judge of a
	// panel, whose failure is a vote): asking again replays the failure
	// instead of paying for it again.
	KeepUnusable bool
}

// repairShown reports whether a repair turn that ended in resp or err
// showed the model its bad reply now: it was sent (answered or not), or
// written into a batch. A turn answered from the cache, or already waiting
// in a batch, replays one counted before (a resumed run, a later wave).
func repairShown(resp *Response, err error) bool {
	var e *Error
	switch {
	case err == nil:
		return !resp.Cached
	case errors.As(err, &e) && e.Class == ClassDeferred:
		return e.Reason == reasonDeferred
	case errors.As(err, &e) && (e.Class == ClassCanceled || e.Class == ClassBudget):
		return false
	}
	return true
}

// ParseError is a reply that still did not parse after every repair turn.
type ParseError struct {
	What     string
	Attempts int // replies received, the first included
	Err      error
}

func (p *ParseError) Error() string {
	return fmt.Sprintf("%s reply unusable after %d attempts: %v", p.What, p.Attempts, p.Err)
}

func (p *ParseError) Unwrap() error { return p.Err }

// errCutOff marks a reply that parsed but was cut off by the server.
var errCutOff = errors.New("the reply was cut off by the token limit or a content filter (finish_reason)")

// CutOff reports whether a choice's finish_reason says the server cut the
// reply off before the model ended it: the token limit ("length", or
// "max_tokens" as some servers name it) or a content filter. What such a
// reply holds is not its answer, whatever part of it parses.
func CutOff(finishReason string) bool {
	switch finishReason {
	case "length", "max_tokens", "content_filter":
		return true
	}
	return false
}

// ChatParsed sends req and parses its reply with a.Parse. A reply that does
// not parse, or was cut off (CutOff: the token limit, a content filter), is shown back to the model
// with the parser's error (a.Repair), up to a.Repairs more times; each repair
// turn is counted in the stage's Repairs once, when it is sent (a replay
// from the cache is not counted again). It returns a *ParseError when no
// reply parsed, or Chat's error.
//
// When no reply parsed, the cached replies of the whole exchange are marked
// unusable (Cache.Invalidate), so asking again sends fresh requests instead
// of replaying them (unless a.KeepUnusable); an exchange that ended in a reply that parsed is never
// invalidated, so asking it again is answered from the cache.
func (c *Client) ChatParsed(ctx context.Context, req Request, a Ask) error {
	stage := req.Stage
	if stage == "" {
		stage = "default"
	}
	var sent []cache.Identity
	for attempt := 0; ; attempt++ {
		if c.cache != nil {
			sent = append(sent, IdentityOf(req))
		}
		resp, err := c.Chat(ctx, req)
		if attempt > 0 && repairShown(resp, err) {
			c.meter.update(stage, func(s *StageStats) { s.Repairs++ })
		}
		if err != nil {
			return err
		}
		if a.OnResponse != nil {
			a.OnResponse(resp)
		}
		reply := resp.Choices[0].Content
		perr := a.Parse(reply)
		if perr == nil && CutOff(resp.Choices[0].FinishReason) {
			perr = errCutOff
		}
		if perr == nil {
			return nil
		}
		if attempt >= a.Repairs {
			if c.cache != nil && !a.KeepUnusable {
				if err := c.cache.Invalidate(sent...); err != nil {
					c.meter.attemptError(stage, "cache_write")
					return cacheWriteError(&req, stage, 0, err)
				}
			}
			return &ParseError{What: a.What, Attempts: attempt + 1, Err: perr}
		}
		if req.Messages, err = a.Repair(req.Messages, reply, perr); err != nil {
			return fmt.Errorf("building the repair turn for the %s: %w", a.What, err)
		}
		req.Online = req.Online || a.RepairsOnline
	}
}
