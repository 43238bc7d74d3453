package sim

import (
	"sort"
	"strings"
	"sync"
)

// PrefixCache configures the simulated server's automatic prefix cache,
// modelled on vLLM's (and on the hosted APIs' prompt caching): a prompt is
// cut into blocks of BlockTokens tokens, each named by a hash of itself and
// every block before it, so a block is reused only after the same
// beginning. A request reuses the leading blocks of its prompt that an
// answered request's prompt had, and its reply reports them, in tokens, in
// usage.prompt_tokens_details.cached_tokens (never the prompt's last
// token: a server computes at least one). A prompt's blocks join the cache
// when its answer is sent, so requests that arrive while another with the
// same beginning is still being answered reuse nothing, as on a real
// server. Without On, replies carry no prompt_tokens_details, as from a
// vLLM server started without --enable-prompt-tokens-details.
type PrefixCache struct {
	On bool
	// BlockTokens is the block size in tokens (default
	// DefaultPrefixBlockTokens, vLLM's; OpenAI caches in 128-token steps).
	BlockTokens int
	// Blocks bounds the blocks held (default 1<<20, about 16M tokens): when
	// full, the blocks not used for the longest are dropped.
	Blocks int
	// MinTokens is the shortest prompt that is cached at all (default 0;
	// OpenAI's is 1,024).
	MinTokens int
}

// DefaultPrefixBlockTokens is vLLM's block size.
const DefaultPrefixBlockTokens = 16

// prefixBlockBytes is a block's size in the bytes of a serialized prompt:
// the simulator counts a token as 4 bytes (tokens).
func prefixBlockBytes(blockTokens int) int { return 4 * blockTokens }

// serializePrompt is a prompt as a prefix cache sees it: its messages in
// order, each its role and content between separators, the way a chat
// template lays messages out one after another.
func serializePrompt(msgs []Message) string {
	n := 0
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for _, m := range msgs {
		b.WriteString(m.Role)
		b.WriteByte(0x1f)
		b.WriteString(m.Content)
		b.WriteByte(0x1e)
	}
	return b.String()
}

// prefixCache is the cache's state: block hashes in two generations, the
// older dropped when the newer fills (an approximate LRU, as the judge's
// verdict cache keeps).
type prefixCache struct {
	cfg      PrefixCache
	mu       sync.Mutex
	cur, old map[uint64]struct{}
}

// newPrefixCache is the cache cfg describes; nil when it is off.
func newPrefixCache(cfg PrefixCache) *prefixCache {
	if !cfg.On {
		return nil
	}
	if cfg.BlockTokens <= 0 {
		cfg.BlockTokens = DefaultPrefixBlockTokens
	}
	if cfg.Blocks <= 0 {
		cfg.Blocks = 1 << 20
	}
	cfg.MinTokens = max(cfg.MinTokens, 0)
	return &prefixCache{cfg: cfg, cur: map[uint64]struct{}{}}
}

// blocks are the chained hashes of the whole blocks of msgs' prompt.
func (p *prefixCache) blocks(msgs []Message) []uint64 {
	text := serializePrompt(msgs)
	size := prefixBlockBytes(p.cfg.BlockTokens)
	out := make([]uint64, 0, len(text)/size)
	var h uint64
	for off := 0; off+size <= len(text); off += size {
		h = newKeyer(h).str(text[off : off+size]).sum()
		out = append(out, h)
	}
	return out
}

// lookup is the number of msgs' prompt tokens the cache holds: its
// leading blocks that are cached, at most all its tokens but one; 0 for a
// nil cache or a prompt shorter than MinTokens.
func (p *prefixCache) lookup(msgs []Message) int {
	if p == nil {
		return 0
	}
	prompt := promptTokens(msgs)
	if prompt < p.cfg.MinTokens {
		return 0
	}
	hashes := p.blocks(msgs)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, h := range hashes {
		if !p.hold(h) {
			break
		}
		n++
	}
	return min(n*p.cfg.BlockTokens, max(prompt-1, 0))
}

// hold reports whether h is cached, moving it to the newer generation;
// p.mu is held.
func (p *prefixCache) hold(h uint64) bool {
	if _, ok := p.cur[h]; ok {
		return true
	}
	if _, ok := p.old[h]; ok {
		p.put(h)
		return true
	}
	return false
}

// put adds h to the newer generation, which becomes the older (the older
// dropped) when it holds half the capacity; p.mu is held.
func (p *prefixCache) put(h uint64) {
	if len(p.cur) >= max(1, p.cfg.Blocks/2) {
		p.old, p.cur = p.cur, make(map[uint64]struct{}, len(p.cur))
	}
	p.cur[h] = struct{}{}
}

// insert caches the blocks of msgs' prompt (an answered request's).
func (p *prefixCache) insert(msgs []Message) {
	if p == nil {
		return
	}
	hashes := p.blocks(msgs)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range hashes {
		if !p.hold(h) {
			p.put(h)
		}
	}
}

// len is the number of blocks held.
func (p *prefixCache) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cur) + len(p.old)
}

// PromptRecorder records the prompts a server is asked (Config.Prompts)
// and measures, for each, what a prefix cache could not share with the
// requests before it: its unshareable characters are its serialized
// prompt's length minus its longest common prefix with any earlier
// prompt. It is the measure of a judge layout: every byte before the
// response that a problem's requests share is shareable. It holds every
// prompt, for tests and measurement commands, not for long runs. It is
// safe for concurrent use; the zero value is ready.
type PromptRecorder struct {
	mu     sync.Mutex
	sorted []string // every prompt so far, sorted: the longest common prefix with a set is with a neighbour
	log    []RecordedPrompt
}

// RecordedPrompt is one recorded request: the template it was rendered
// from, whether it is a repair turn, its serialized prompt (serializePrompt)
// and that prompt's length in bytes and the bytes of it no earlier prompt
// began with.
type RecordedPrompt struct {
	Kind     Kind
	Repair   bool
	Prompt   string
	Chars    int
	Unshared int
	// PromptTokens and CachedTokens are what the reply's usage said: its
	// prompt tokens, and those the prefix cache reused (0 without one).
	PromptTokens, CachedTokens int
}

// Record records one request's prompt and returns what it measured.
func (r *PromptRecorder) Record(kind Kind, msgs []Message) RecordedPrompt {
	return r.RecordTokens(kind, msgs, promptTokens(msgs), 0)
}

// RecordTokens is Record with the prompt tokens the reply reports and
// those of them the prefix cache reused.
func (r *PromptRecorder) RecordTokens(kind Kind, msgs []Message, prompt, cached int) RecordedPrompt {
	text := serializePrompt(msgs)
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.SearchStrings(r.sorted, text)
	shared := 0
	if i > 0 {
		shared = commonPrefix(text, r.sorted[i-1])
	}
	if i < len(r.sorted) {
		shared = max(shared, commonPrefix(text, r.sorted[i]))
	}
	r.sorted = append(r.sorted, "")
	copy(r.sorted[i+1:], r.sorted[i:])
	r.sorted[i] = text
	repair := false
	for _, m := range msgs {
		repair = repair || m.Role == "assistant"
	}
	rec := RecordedPrompt{Kind: kind, Repair: repair, Prompt: text, Chars: len(text), Unshared: len(text) - shared, PromptTokens: prompt, CachedTokens: cached}
	r.log = append(r.log, rec)
	return rec
}

// Prompts returns what was recorded, in the order the requests came.
func (r *PromptRecorder) Prompts() []RecordedPrompt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RecordedPrompt(nil), r.log...)
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
