package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// satisfyRequest is a satisfaction judge's request about solution.
func satisfyRequest(t *testing.T, solution string) request {
	t.Helper()
	items := []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "Factors the quadratic into (x - 2)(x - 3) before reading off the roots.", Weight: 1, Polarity: 1},
		{ID: 2, Type: schema.TypePitfall, Text: "Takes the product of the roots, 6, instead of their sum.", Weight: 1, Polarity: -1},
		{ID: 3, Type: schema.TypeAnswer, Text: "States that the sum of the roots is 5.", Weight: 1, Polarity: 1},
	}
	msgs, err := loadPrompts(t).SatisfyMessages("Find the sum of the roots of x^2 - 5x + 6 = 0.", solution, "5", items)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	return request{Model: "judge", Messages: msgs, Temperature: &zero}
}

// cachedTokens is usage.prompt_tokens_details.cached_tokens of a reply
// body, and whether the reply has the field.
func cachedTokens(t *testing.T, body []byte) (int, bool) {
	t.Helper()
	var r struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			Details      *struct {
				CachedTokens *int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	if r.Usage.Details == nil || r.Usage.Details.CachedTokens == nil {
		return 0, false
	}
	return *r.Usage.Details.CachedTokens, true
}

// The simulated endpoint's prefix cache works as vLLM's automatic prefix
// caching does: a request reuses the whole blocks of its prompt that an
// answered request's prompt began with, and its reply counts them in
// usage.prompt_tokens_details.cached_tokens; without the cache the field
// is absent, as from a server that does not report it.
func TestPrefixCacheReportsCachedTokens(t *testing.T) {
	t.Parallel()
	s := New(Config{PrefixCache: PrefixCache{On: true}})
	first := satisfyRequest(t, "### Step 1: Factor.\n(x - 2)(x - 3) = 0.\n### Step 2: Add.\n2 + 3 = 5.\n<answer>5</answer>")
	second := satisfyRequest(t, "### Step 1: Use Vieta.\nThe sum of the roots is 5.\n<answer>5</answer>")

	code, body := call(t, s, first)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if n, ok := cachedTokens(t, body); !ok || n != 0 {
		t.Fatalf("first request: cached_tokens %d (reported %v), want 0 reported", n, ok)
	}
	code, body = call(t, s, second)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	n, ok := cachedTokens(t, body)
	shared := commonPrefixBytes(first.Messages, second.Messages)
	want := shared / prefixBlockBytes(DefaultPrefixBlockTokens) * DefaultPrefixBlockTokens
	if !ok || n != want || n == 0 {
		t.Fatalf("second request: cached_tokens %d (reported %v), want %d (the whole %d-token blocks of the %d bytes both prompts begin with)",
			n, ok, want, DefaultPrefixBlockTokens, shared)
	}
	// Asked again, the whole prompt but its last token is cached.
	_, body = call(t, s, second)
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if n, _ := cachedTokens(t, body); n <= want || n >= r.Usage.PromptTokens {
		t.Fatalf("a repeated request: cached_tokens %d, want more than %d and less than its %d prompt tokens", n, want, r.Usage.PromptTokens)
	}

	plain := New(Config{})
	for _, req := range []request{first, second} {
		_, body = call(t, plain, req)
		if n, ok := cachedTokens(t, body); ok {
			t.Fatalf("without the prefix cache: cached_tokens %d reported, want no prompt_tokens_details", n)
		}
	}
}

// A prompt's blocks join the cache once it is answered: a request that
// arrives while another with the same prefix is still being computed does
// not reuse it, as on a real server, which is why a group's requests are
// worth sending warm-first.
func TestPrefixCacheHoldsOnlyAnsweredPrompts(t *testing.T) {
	t.Parallel()
	s := New(Config{PrefixCache: PrefixCache{On: true}})
	req := satisfyRequest(t, "### Step 1: Factor.\n(x - 2)(x - 3) = 0.\n<answer>5</answer>")
	msgs := toMessages(req.Messages)
	if got := s.prefix.lookup(msgs); got != 0 {
		t.Fatalf("an empty cache reuses %d tokens", got)
	}
	if got := s.prefix.lookup(msgs); got != 0 {
		t.Fatalf("a prompt looked up but not answered is reused for %d tokens", got)
	}
	s.prefix.insert(msgs)
	if got := s.prefix.lookup(msgs); got == 0 {
		t.Fatal("an answered prompt is not reused")
	}
}

// The prefix cache holds at most its capacity in blocks: the oldest are
// dropped first.
func TestPrefixCacheBounded(t *testing.T) {
	t.Parallel()
	pc := newPrefixCache(PrefixCache{On: true, Blocks: 64})
	for i := range 200 {
		pc.insert([]Message{{Role: "user", Content: strings.Repeat(string(rune('a'+i%26)), 64*10) + strings.Repeat("x", i)}})
	}
	if n := pc.len(); n > 2*64 {
		t.Fatalf("the cache holds %d blocks, more than twice its capacity of 64", n)
	}
}

// commonPrefixBytes is how many bytes of the serialized prompts of a and b
// are the same from the start.
func commonPrefixBytes(a, b []prompts.Message) int {
	x, y := serializePrompt(toMessages(a)), serializePrompt(toMessages(b))
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] {
		n++
	}
	return n
}
