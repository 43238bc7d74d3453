// Package idmap holds per-problem state compactly: a map keyed by problem id
// that keeps an id of 16 lower-case hex digits (every id the toolkit makes)
// as its uint64, so an entry costs a map slot and no string besides.
package idmap

import "strconv"

// Map maps problem ids to V. The zero Map is not usable: make one with New.
type Map[V any] struct {
	hex   map[uint64]V
	other map[string]V
}

// New returns an empty Map.
func New[V any]() Map[V] {
	return Map[V]{hex: map[uint64]V{}, other: map[string]V{}}
}

// hexID parses a canonical id: 16 lower-case hex digits.
func hexID(id string) (uint64, bool) {
	if len(id) != 16 {
		return 0, false
	}
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(id, 16, 64)
	return v, err == nil
}

// Get returns id's value.
func (m Map[V]) Get(id string) (V, bool) {
	if k, ok := hexID(id); ok {
		v, found := m.hex[k]
		return v, found
	}
	v, found := m.other[id]
	return v, found
}

// Has reports whether id is in m.
func (m Map[V]) Has(id string) bool {
	_, ok := m.Get(id)
	return ok
}

// Set sets id's value.
func (m Map[V]) Set(id string, v V) {
	if k, ok := hexID(id); ok {
		m.hex[k] = v
	} else {
		m.other[id] = v
	}
}

// Len is the number of ids in m.
func (m Map[V]) Len() int { return len(m.hex) + len(m.other) }
