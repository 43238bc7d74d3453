// Package jsonenc owns the two pieces of JSON writing that rewardd's
// hand-written encoders (reward.Values, the /v1/score_group answer) share
// with encoding/json's output byte for byte: which strings need no
// escaping, and how a float64 is formatted.
package jsonenc

import (
	"math"
	"strconv"
)

// PlainString reports whether s needs no escaping in JSON (encoding/json also
// escapes <, > and &, and non-ASCII U+2028, U+2029 and invalid UTF-8).
func PlainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// AppendFloat formats f as encoding/json does: the shortest decimal, in
// exponent form only below 1e-6 or from 1e21, with exponents unpadded.
func AppendFloat(b []byte, f float64) []byte {
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
