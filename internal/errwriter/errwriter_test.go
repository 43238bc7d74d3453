package errwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	got bytes.Buffer
}

var errFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		k := f.n - f.got.Len()
		f.got.Write(p[:k])
		return k, errFull
	}
	return f.got.Write(p)
}

// TestFirstErrorSticks: after a write fails nothing more is written, every
// later write reports the first error, and the command's exit code says so.
func TestFirstErrorSticks(t *testing.T) {
	dst := &failAfter{n: 10}
	w := New(dst)
	fmt.Fprintf(w, "0123456")
	if w.Err() != nil {
		t.Fatalf("Err after a write that fit: %v", w.Err())
	}
	fmt.Fprintf(w, "789abc")
	fmt.Fprintf(w, "d")
	if _, err := io.WriteString(w, "e"); !errors.Is(err, errFull) || !errors.Is(w.Err(), errFull) {
		t.Errorf("write after the failure: %v, Err %v; want the first error", err, w.Err())
	}
	if dst.got.String() != "0123456789" {
		t.Errorf("written %q; want nothing after the failure", dst.got.String())
	}
	var stderr strings.Builder
	if code := w.ExitCode(0, "distill", &stderr); code != 1 || stderr.String() != "distill: writing to standard output: no space left on device\n" {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if code := w.ExitCode(3, "distill", &stderr); code != 3 {
		t.Errorf("a command's own failure: exit %d, want its 3", code)
	}
	if code := New(io.Discard).ExitCode(0, "distill", &stderr); code != 0 {
		t.Errorf("no failure: exit %d", code)
	}
}

// TestShortWriteIsAnError: a writer that takes less than it was given
// without an error still fails the output.
func TestShortWriteIsAnError(t *testing.T) {
	w := New(shortWriter{})
	if _, err := w.Write([]byte("abc")); !errors.Is(err, io.ErrShortWrite) || !errors.Is(w.Err(), io.ErrShortWrite) {
		t.Errorf("short write: %v, Err %v", err, w.Err())
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) - 1, nil }
