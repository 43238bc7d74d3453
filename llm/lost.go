package llm

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"syscall"
)

// An attempt whose reply was lost may still be on the provider's bill: a
// reply cut off mid-body was generated, and a request the client stopped
// waiting for (a deadline, a reset) may have been. Such an attempt is
// charged at once, at what it may have cost (a lost reply's usage is not
// known: see chargeLost), counted in StageStats.LostReplies, LostTokens
// and LostCostUSD and in the cost, so that budgets stop on it. The
// estimate errs high; a provider that billed nothing (a request it never
// started) makes the report say more than the bill, never less.

// mayBeBilled reports whether an attempt that failed so may be on the
// provider's bill: a 2xx whose body was cut or did not decode, a gateway's
// 502 or 504, the attempt's deadline, or a connection reset or closed once
// the request may have gone out. A refusal (429, 5xx from the provider
// itself, a 4xx) and a connection never made (refused, no such host) are
// not billed.
func mayBeBilled(status int, cut bool, err error) bool {
	switch {
	case err == nil:
		return false
	case status/100 == 2, status == 502, status == 504:
		return true
	case status != 0:
		return false
	case cut:
		return true
	}
	var dns *net.DNSError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// chargeLost charges an attempt of cl whose reply was lost at what it may
// have cost: the budget's estimate of the attempt (budgetEstimate: its
// prompt at 3 bytes a token and the largest completion the stage's
// answers had, or its max_tokens before the first), which errs high as a
// budget must; before anything prices a completion, its prompt alone.
func (c *Client) chargeLost(cl *call) {
	e := c.budgetEstimate(cl)
	if math.IsInf(e.CostUSD, 1) {
		var chars int64
		for _, m := range cl.req.Messages {
			chars += int64(len(m.Content) + len(m.Role))
		}
		prompt := chars/3 + 16
		e = Estimate{CostUSD: c.meter.Cost(cl.req.Model, prompt, 0), Tokens: float64(prompt)}
	}
	c.meter.lost(cl.stage, e)
}

// lost counts a reply lost after the provider may have generated it, at
// the estimate e.
func (m *Meter) lost(stage string, e Estimate) {
	m.update(stage, func(s *StageStats) {
		s.LostReplies++
		s.LostTokens += int64(math.Ceil(e.Tokens))
		s.LostCostUSD += e.CostUSD
		s.CostUSD += e.CostUSD
	})
}
