package cache

import (
	"crypto/sha256"
	"strconv"
)

// Identity is a request's full identity in the cache: Key is the 64-bit
// hash that indexes the cache (llm.CacheKey writes it as 16 hex digits),
// and Digest is SHA-256 over the same canonical encoding of the request. A
// cache entry answers a request only when both match, because 64 bits can
// collide. llm.IdentityOf computes it from a request; the cache never sees
// the request itself.
type Identity struct {
	Key    uint64
	Digest [sha256.Size]byte
}

// String is the identity's key as 16 hex digits (llm.CacheKey's form).
func (id Identity) String() string { return hexKey(id.Key) }

func hexKey(k uint64) string {
	var out [16]byte
	s := strconv.AppendUint(out[:0], k, 16)
	if pad := 16 - len(s); pad > 0 {
		var b [16]byte
		for i := range pad {
			b[i] = '0'
		}
		copy(b[pad:], s)
		return string(b[:])
	}
	return string(s)
}
