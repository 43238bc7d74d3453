package llm

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllSized: a body reads back whole whatever Content-Length
// declares (right, too small, too large, unknown, absurd), in one
// allocation when the declaration is right, and a read error is returned
// with what came before it.
func TestReadAllSized(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 300) // 4800 bytes
	for _, tc := range []struct {
		name     string
		declared int64
		maxCap   int
	}{
		{"declared right", int64(len(body)), len(body) + 1},
		{"declared too small", 100, 0},
		{"declared too large", 10000, 10001},
		{"unknown", -1, 0},
		{"absurd", 1 << 40, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllSized(nil, iotest.HalfReader(strings.NewReader(body)), tc.declared)
			if err != nil || string(got) != body {
				t.Fatalf("read %d bytes, %v; want the %d-byte body", len(got), err, len(body))
			}
			if tc.maxCap > 0 && cap(got) > tc.maxCap {
				t.Errorf("capacity %d, want at most %d (one allocation)", cap(got), tc.maxCap)
			}
		})
	}
	boom := errors.New("connection reset")
	got, err := readAllSized(nil, io.MultiReader(bytes.NewReader([]byte("partial")), iotest.ErrReader(boom)), 100)
	if !errors.Is(err, boom) || string(got) != "partial" {
		t.Errorf("got %q, %v; want \"partial\" and the read error", got, err)
	}
}

// BenchmarkReadBody reads a 4.8 KB response body the way captureDoer did
// (io.ReadAll) and does (readAllSized with its Content-Length).
func BenchmarkReadBody(b *testing.B) {
	body := []byte(strings.Repeat("0123456789abcdef", 300))
	b.Run("io.ReadAll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := io.ReadAll(bytes.NewReader(body)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readAllSized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := readAllSized(nil, bytes.NewReader(body), int64(len(body))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
