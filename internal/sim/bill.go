package sim

import (
	"maps"
	"sync"
)

// Usage is what the provider billed for some answers: how many, and their
// tokens as the replies' usage reports them.
type Usage struct {
	Responses, PromptTokens, CompletionTokens int64
}

func (u *Usage) add(v Usage) {
	u.Responses += v.Responses
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
}

// modelUsage is a batch row's usage and the model that answered it.
type modelUsage struct {
	model string
	Usage
}

// Bill is the simulated provider's bill: the usage of every answer it
// generated, by model, online and in batches. An online answer is billed
// once the provider sends its status 200, whether or not the client reads
// the whole reply (a truncated reply is billed); a batch row once it is
// answered with status 200, whether or not anyone downloads the batch's
// output. It is the provider's side of what a client's report should
// count.
type Bill struct {
	Online, Batch map[string]Usage
}

// Cost prices the bill with price, which prices a model's tokens online or
// at the batch rate.
func (b Bill) Cost(price func(model string, batch bool, prompt, completion int64) float64) float64 {
	var c float64
	for model, u := range b.Online {
		c += price(model, false, u.PromptTokens, u.CompletionTokens)
	}
	for model, u := range b.Batch {
		c += price(model, true, u.PromptTokens, u.CompletionTokens)
	}
	return c
}

// Total is the bill's usage over every model, online and in batches.
func (b Bill) Total() Usage {
	var t Usage
	for _, m := range []map[string]Usage{b.Online, b.Batch} {
		for _, u := range m {
			t.add(u)
		}
	}
	return t
}

// bill accumulates a Bill.
type bill struct {
	mu            sync.Mutex
	online, batch map[string]Usage
}

func (b *bill) add(batch bool, model string, u Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := &b.online
	if batch {
		m = &b.batch
	}
	if *m == nil {
		*m = map[string]Usage{}
	}
	cur := (*m)[model]
	cur.add(u)
	(*m)[model] = cur
}

// Bill returns what the simulated provider has billed so far.
func (s *Server) Bill() Bill {
	s.bill.mu.Lock()
	defer s.bill.mu.Unlock()
	return Bill{Online: maps.Clone(s.bill.online), Batch: maps.Clone(s.bill.batch)}
}
