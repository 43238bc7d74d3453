package llm

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// keySalt versions the key recipe: a change to what goes into a key, or to
// how responses are interpreted, must change it. It is the cache's own
// version, apart from the record layout, so a new record layout keeps every
// paid response.
const keySalt = "rubricforge-cache/1"

// CacheKey is the response-cache key of req: 16 hex digits of xxhash64
// over a length-prefixed encoding of the model, the messages, the
// effective sampling parameters (temperature, top_p, max tokens, n,
// JSON mode), the seed and the sample index, salted with keySalt, and,
// when req.Scope is set, the scope's endpoint kind and template hash.
//
// The endpoint, the API key and Request.Stage are not part of it, so the
// same question asked of the same model by another stage or through
// another server is answered from the cache. A judge's request sets Scope,
// so its verdict is also not replayed from another kind of server or from
// another version of its template.
//
// The key indexes the cache; a hit is decided by the request's full
// identity (IdentityOf), because 64 bits can collide.
func CacheKey(req Request) string {
	d := xxhash.New()
	encodeRequest(d, &req)
	return cache.Identity{Key: d.Sum64()}.String()
}

// IdentityOf returns req's identity in the response cache: its Key is
// CacheKey's hash, and its Digest is SHA-256 over the same canonical
// encoding. A cache entry answers a request only when both match.
func IdentityOf(req Request) cache.Identity {
	s := identitySink{xx: xxhash.New(), sha: sha256.New()}
	encodeRequest(&s, &req)
	id := cache.Identity{Key: s.xx.Sum64()}
	s.sha.Sum(id.Digest[:0])
	return id
}

// identitySink feeds the canonical encoding to both of an identity's hashes
// as it is written, rather than building it in a buffer the size of the
// prompt first (an eighth of the bytes a grounded run allocated).
type identitySink struct {
	xx  *xxhash.Digest
	sha hash.Hash
	buf [512]byte // a string's bytes on their way to sha, which takes only []byte
}

func (s *identitySink) Write(p []byte) (int, error) {
	s.xx.Write(p)
	return s.sha.Write(p)
}

func (s *identitySink) WriteString(str string) (int, error) {
	s.xx.WriteString(str)
	for rest := str; len(rest) > 0; {
		n := copy(s.buf[:], rest)
		s.sha.Write(s.buf[:n])
		rest = rest[n:]
	}
	return len(str), nil
}

// keySink is what the canonical encoding is written to: a hash, or both of
// an identity's.
type keySink interface {
	Write(p []byte) (int, error)
	WriteString(s string) (int, error)
}

// encodeRequest writes the canonical encoding of req to w. Its bytes are
// pinned by TestCacheKeyPinned: changing them orphans every cache.
func encodeRequest(w keySink, req *Request) {
	k := keyWriter{w: w}
	k.str(keySalt)
	k.str(req.Model)
	k.uint(uint64(len(req.Messages)))
	for _, m := range req.Messages {
		k.str(m.Role)
		k.str(m.Content)
	}
	k.optFloat(req.Temperature)
	k.optFloat(req.TopP)
	k.uint(uint64(max(req.MaxTokens, 0)))
	k.uint(uint64(max(req.N, 1)))
	if req.JSON {
		k.uint(1)
	} else {
		k.uint(0)
	}
	if req.Seed != nil {
		k.uint(1)
		k.uint(uint64(*req.Seed))
	} else {
		k.uint(0)
	}
	k.uint(uint64(int64(req.SampleIndex)))
	if req.Scope != (Scope{}) {
		k.str(scopeMark)
		k.str(req.Scope.EndpointKind)
		k.str(req.Scope.Template)
	}
}

// Scope is what decides a judge's verdict beyond the request's model,
// messages and sampling: the kind of server that answers it and the hash
// of the template the question was written with (the messages hold the
// rendered text, not which template version made it). Judge requests set
// it; every other request leaves it zero, and a zero Scope adds nothing to
// the encoding, so their keys are those of earlier versions.
type Scope struct {
	// EndpointKind is the server family (see EndpointKind): one family's
	// verdicts are not replayed as another's, while two servers of one
	// family serving one model share them.
	EndpointKind string
	// Template is the hash of the judge's template (prompts.Set.Hash).
	Template string
}

// scopeMark starts a Scope's part of the encoding, after every part a
// request without one has.
const scopeMark = "scope/1"

// Endpoint kinds known by name. Any other lower-case name may be set; a
// base URL says only whether the server is OpenAI's.
const (
	KindOpenAI  = "openai"
	KindGeneric = "openai-compatible"
)

// EndpointKind is the endpoint kind of a server: kind when it is set (an
// endpoint's endpoint_kind setting, or rewardd's --judge-endpoint-kind:
// openai, vllm, sglang, or any other lower-case name), else KindOpenAI for
// a base URL on api.openai.com and KindGeneric for any other.
func EndpointKind(kind, baseURL string) string {
	if kind != "" {
		return kind
	}
	if u, err := url.Parse(baseURL); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		return KindOpenAI
	}
	return KindGeneric
}

// ParseSeed reads a judge seed flag's value (rewardd's and validate
// rejudge's --judge-seed): an integer is sent as the seed, "none" sends no
// seed (nil), for a server that refuses the seed parameter.
func ParseSeed(v string) (*int64, error) {
	if v == "none" {
		return nil, nil
	}
	seed, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("seed %q: want an integer, or none to send no seed", v)
	}
	return &seed, nil
}

// CheckEndpointKind returns an error when kind is not a usable endpoint
// kind: empty (the default), or lower-case letters, digits, '.', '_' and
// '-', starting with a letter.
func CheckEndpointKind(kind string) error {
	for i, c := range kind {
		letter := c >= 'a' && c <= 'z'
		if letter || (i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')) {
			continue
		}
		return fmt.Errorf("endpoint kind %q: want a lower-case name such as openai, vllm or sglang", kind)
	}
	return nil
}

type keyWriter struct {
	w   keySink
	buf [binary.MaxVarintLen64]byte
}

func (k *keyWriter) uint(v uint64) {
	n := binary.PutUvarint(k.buf[:], v)
	_, _ = k.w.Write(k.buf[:n]) // a keySink is a hash: its Write never fails
}

func (k *keyWriter) str(s string) {
	k.uint(uint64(len(s)))
	_, _ = k.w.WriteString(s) // likewise
}

// optFloat writes presence, then the IEEE bits with -0 folded into 0.
func (k *keyWriter) optFloat(f *float64) {
	if f == nil {
		k.uint(0)
		return
	}
	v := *f
	if v == 0 {
		v = 0
	}
	k.uint(1)
	binary.LittleEndian.PutUint64(k.buf[:8], math.Float64bits(v))
	_, _ = k.w.Write(k.buf[:8]) // likewise
}
