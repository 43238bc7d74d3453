package reward

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
)

// Values are named numbers: a result's components or metrics. They encode as
// a JSON object exactly as a map[string]float64 does (keys sorted), without
// the per-value allocations of encoding/json's map encoder.
type Values map[string]float64

// MarshalJSON writes the object with keys in byte order and numbers formatted
// as encoding/json formats a float64.
func (v Values) MarshalJSON() ([]byte, error) {
	if b, ok := v.appendJSON(make([]byte, 0, 2+len(v)*40)); ok {
		return b, nil
	}
	return json.Marshal(map[string]float64(v)) // its escaping, or its error on NaN and ±Inf
}

// appendJSON appends v as MarshalJSON writes it; it reports false, having
// appended part of it, when a key needs escaping or a value is NaN or ±Inf.
func (v Values) appendJSON(b []byte) ([]byte, bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	var store [16]string
	keys := store[:0]
	for k, f := range v {
		if !plainString(k) || math.IsInf(f, 0) || math.IsNaN(f) {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		b = appendFloat(b, v[k])
	}
	return append(b, '}'), true
}

// plainString reports whether s needs no escaping in JSON (encoding/json also
// escapes <, > and &, and non-ASCII U+2028, U+2029 and invalid UTF-8).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendFloat formats f as encoding/json does: the shortest decimal, in
// exponent form only below 1e-6 or from 1e21, with exponents unpadded.
func appendFloat(b []byte, f float64) []byte {
	if i := int64(f); float64(i) == f && i > -1e15 && i < 1e15 && (i != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(b, i, 10) // whole numbers, the most common, at integer speed
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 -> e-7
		b = b[:n-1]
	}
	return b
}
