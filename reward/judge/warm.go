package judge

import (
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// A caller that sends a group of requests sharing a rubric (the responses
// of one prompt) sends the first alone and the others once it is answered,
// so that the judge server's prefix cache computes the rubric once; or all
// at once when the server has said it caches: a reply about that rubric
// reported prompt tokens its prefix cache reused
// (usage.prompt_tokens_details.cached_tokens). Warm and WarmGrounded tell
// which.

// Warm reports whether the judge's replies about the rubric of question
// and items have said the server reused a cached prefix; for a panel,
// every judge's.
func (j *Judge) Warm(question string, items []schema.Item) bool {
	if j.members != nil {
		for _, m := range j.members {
			if !m.Warm(question, items) {
				return false
			}
		}
		return true
	}
	return j.warm.has(sum64(j.rubricKey(question, items)))
}

// WarmGrounded is Warm for the grounded question of lab.
func (j *Judge) WarmGrounded(lab *schema.Label) bool {
	if j.members != nil {
		for _, m := range j.members {
			if !m.WarmGrounded(lab) {
				return false
			}
		}
		return true
	}
	return lab.Grounded != nil && j.warm.has(sum64(j.groundedKey(lab)))
}

// sum64 is the sum of a rubric's key digest.
func sum64(d xxhash.Digest) uint64 { return d.Sum64() }

// warmSet is a bounded set of rubric keys, in two generations as the
// verdict cache is.
type warmSet struct {
	mu   sync.Mutex
	keys verdictCache[struct{}]
}

func newWarmSet(entries int) warmSet {
	return warmSet{keys: newVerdictCache[struct{}](max(entries, 1024))}
}

// note marks the rubric key (computed by key when needed) warm when resp,
// a live answer, says the server reused a cached prefix.
func (w *warmSet) note(resp *llm.Response, key func() uint64) {
	if resp.Cached || resp.CachedPromptTokens <= 0 {
		return
	}
	k := key()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys.put(k, struct{}{})
}

func (w *warmSet) has(k uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.keys.get(k)
	return ok
}
