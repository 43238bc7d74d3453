package sim

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
)

// keyer builds 64-bit keys from length-prefixed parts, so that ("ab","c")
// and ("a","bc") differ.
type keyer struct{ d xxhash.Digest }

func newKeyer(seed uint64) *keyer {
	k := &keyer{}
	k.d.ResetWithSeed(seed)
	return k
}

func (k *keyer) str(s string) *keyer {
	k.u64(uint64(len(s)))
	_, _ = k.d.WriteString(s)
	return k
}

func (k *keyer) u64(v uint64) *keyer {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	_, _ = k.d.Write(b[:])
	return k
}

func (k *keyer) optF(v *float64) *keyer {
	if v == nil {
		return k.u64(0)
	}
	return k.u64(1).u64(math.Float64bits(*v))
}

func (k *keyer) sum() uint64 { return k.d.Sum64() }

// key hashes a seed and strings.
func key(seed uint64, parts ...string) uint64 {
	k := newKeyer(seed)
	for _, p := range parts {
		k.str(p)
	}
	return k.sum()
}

// mix64 is the splitmix64 finalizer.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(mix64(h)>>11) / (1 << 53) }

// rng is a small deterministic generator (splitmix64).
type rng struct{ s uint64 }

func newRNG(seed uint64) *rng { return &rng{s: seed} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// intn is uniform in [0, n); n must be positive.
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// chance is true with probability p.
func (r *rng) chance(p float64) bool { return r.float() < p }

func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

// perm returns a random permutation of [0, n).
func (r *rng) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}
