package reward

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/rubricforge/rubricforge/internal/jsonenc"
)

// Values are named numbers: a result's components or metrics. They encode as
// a JSON object exactly as a map[string]float64 does (keys sorted), without
// the per-value allocations of encoding/json's map encoder.
type Values map[string]float64

// MarshalJSON writes the object with keys in byte order and numbers formatted
// as encoding/json formats a float64.
func (v Values) MarshalJSON() ([]byte, error) {
	if b, ok := v.AppendJSON(make([]byte, 0, 2+len(v)*40)); ok {
		return b, nil
	}
	return json.Marshal(map[string]float64(v)) // its escaping, or its error on NaN and ±Inf
}

// AppendJSON appends v as MarshalJSON writes it; it reports false, having
// appended part of it, when a key needs escaping or a value is NaN or ±Inf.
func (v Values) AppendJSON(b []byte) ([]byte, bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	var store [16]string
	keys := store[:0]
	for k, f := range v {
		if !jsonenc.PlainString(k) || math.IsInf(f, 0) || math.IsNaN(f) {
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
		b = jsonenc.AppendFloat(b, v[k])
	}
	return append(b, '}'), true
}
