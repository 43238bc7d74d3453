package jsonenc

import (
	"encoding/json"
	"math"
	"testing"
)

// TestAppendStringMatchesEncodingJSON: a string is escaped byte for byte as
// encoding/json escapes it, so a hand-written body equals a marshalled one.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"plain", "Write 1 question-rubric pair from the passage below."},
		{"quotes and backslash", `say "hi" \ bye`},
		{"short escapes", "a\bb\fc\nd\re\tf"},
		{"other control bytes", "\x00\x01\x1f\x7f"},
		{"html", `<passage title="a & b">x</passage>`},
		{"multibyte", "énergie — 数学 ∑ 🙂"},
		{"line and paragraph separators", "a\u2028b\u2029c"},
		{"invalid utf-8", "a\xffb\xc3(c\xe2\x82"},
		{"truncated rune at end", "abc\xe2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendString([]byte("x"), tt.in); string(got) != "x"+string(want) {
				t.Errorf("AppendString(%q) = %s, encoding/json: %s", tt.in, got[1:], want)
			}
		})
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>\"\\\n\t\x00", "\u2028\u2029", "\xff\xfe", "é数🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json: %s", s, got, want)
		}
	})
}

// TestAppendFloat32MatchesEncodingJSON: float32 fields (go-openai's
// temperature and top_p) format as encoding/json formats them.
func TestAppendFloat32MatchesEncodingJSON(t *testing.T) {
	for _, f := range []float32{0, 1, 0.7, 0.95, 1.5, 2, -0.5, math.SmallestNonzeroFloat32, 1e-6, 9.99e-7, 1e21, 3.4e38, 123456.78} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat32(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat32(%v) = %s, encoding/json: %s", f, got, want)
		}
	}
}

func FuzzAppendFloat32(f *testing.F) {
	f.Add(uint32(0x3f333333))
	f.Add(uint32(1))
	f.Fuzz(func(t *testing.T, bits uint32) {
		v := math.Float32frombits(bits)
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return
		}
		want, _ := json.Marshal(v)
		if got := AppendFloat32(nil, v); string(got) != string(want) {
			t.Fatalf("AppendFloat32(%v) = %s, encoding/json: %s", v, got, want)
		}
	})
}
