package llm

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// TestIdentityOfHashesTheEncoding: IdentityOf's key and digest are the
// hashes of the canonical encoding written out whole, as they were computed
// before the encoding was streamed into the hashes (every cache's entries
// are found by them).
func TestIdentityOfHashesTheEncoding(t *testing.T) {
	temp, seed := 0.7, int64(3)
	reqs := []Request{
		{Model: "m", Messages: []Message{{Role: "user", Content: "What is 2+2?"}}, Temperature: &temp, Seed: &seed, SampleIndex: 3, MaxTokens: 100},
		{Model: "simulated", Messages: []Message{{Role: "system", Content: strings.Repeat("s", 511)},
			{Role: "user", Content: strings.Repeat("passage é 数\n", 700)}}, N: 4, JSON: true},
		{Model: "", Messages: []Message{{Role: "user", Content: strings.Repeat("x", 512)}, {Role: "user", Content: ""}}},
	}
	for i, req := range reqs {
		var b bytes.Buffer
		encodeRequest(&b, &req)
		want := cache.Identity{Key: xxhash.Sum64(b.Bytes()), Digest: sha256.Sum256(b.Bytes())}
		if got := IdentityOf(req); got != want {
			t.Errorf("request %d: IdentityOf = %x %x, the encoding's hashes %x %x", i, got.Key, got.Digest, want.Key, want.Digest)
		}
		if got := IdentityOf(req).String(); got != CacheKey(req) {
			t.Errorf("request %d: identity's key %s, CacheKey %s", i, got, CacheKey(req))
		}
	}
}

// BenchmarkIdentityOf: the identity of a 7 KB grounded prompt.
func BenchmarkIdentityOf(b *testing.B) {
	req := Request{Model: "simulated", Temperature: ptr(0.0), MaxTokens: 4096, Seed: ptr[int64](1), JSON: true,
		Messages: []Message{{Role: "system", Content: strings.Repeat("You write exam questions. ", 12)},
			{Role: "user", Content: strings.Repeat("The encoder maps each token to a vector; attention weights query-key pairs.\n", 90)}}}
	b.ReportAllocs()
	for b.Loop() {
		IdentityOf(req)
	}
}

// TestIdentityKeyIsCacheKey: the identity's key is CacheKey's value and its
// digest is over the same encoding, so each request change that changes
// the key changes the digest too.
func TestIdentityKeyIsCacheKey(t *testing.T) {
	seed := int64(7)
	reqs := []Request{
		simpleRequest("q"),
		{Model: "m", Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "q"}}, Temperature: ptr(0.7), N: 3, Seed: &seed, SampleIndex: 2, JSON: true},
		{Model: "m", Messages: []Message{{Role: "user", Content: string(make([]byte, 10000))}}},
	}
	digests := map[[32]byte]bool{}
	for _, req := range reqs {
		id := IdentityOf(req)
		if id.String() != CacheKey(req) {
			t.Errorf("identity key %s, CacheKey %s", id, CacheKey(req))
		}
		digests[id.Digest] = true
	}
	if len(digests) != len(reqs) {
		t.Error("distinct requests share a digest")
	}
}

// FuzzIdentity: for any request, the identity's key equals CacheKey, and
// the stage (not part of the question) changes neither.
func FuzzIdentity(f *testing.F) {
	f.Add("m", "user", "What is 2+2?", 0.7, int64(3), 3, 100, false)
	f.Add("", "", "", 0.0, int64(0), 0, 0, true)
	f.Fuzz(func(t *testing.T, model, role, content string, temp float64, seed int64, sample, maxTokens int, json bool) {
		req := Request{Stage: "rollout", Model: model, Messages: []Message{{Role: role, Content: content}}, Temperature: &temp, Seed: &seed, SampleIndex: sample, MaxTokens: maxTokens, JSON: json}
		id := IdentityOf(req)
		if id.String() != CacheKey(req) {
			t.Fatalf("identity key %s, CacheKey %s", id, CacheKey(req))
		}
		req.Stage = "judge"
		if IdentityOf(req) != id {
			t.Fatal("the stage changed the identity")
		}
	})
}
