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
	if v == nil {
		return []byte("null"), nil
	}
	var store [16]string
	keys := store[:0]
	size := 2
	for k := range v {
		if !plainKey(k) {
			return json.Marshal(map[string]float64(v))
		}
		f := v[k]
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return json.Marshal(map[string]float64(v)) // encoding/json's own error
		}
		keys = append(keys, k)
		size += len(k) + 28
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
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
	return append(b, '}'), nil
}

// plainKey reports whether k needs no escaping in JSON (encoding/json also
// escapes <, > and &).
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendFloat formats f as encoding/json does: the shortest decimal, in
// exponent form only below 1e-6 or from 1e21, with exponents unpadded.
func appendFloat(b []byte, f float64) []byte {
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
