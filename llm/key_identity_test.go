package llm

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
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
		want := Identity{Key: xxhash.Sum64(b.Bytes()), Digest: sha256.Sum256(b.Bytes())}
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
