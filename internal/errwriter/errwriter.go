// Package errwriter is a writer that keeps its first error, so that output
// made of many prints is checked once, where it ends: audit's text reports
// return it, and the commands' standard output is checked before they exit
// (a report redirected to a full disk is a failure, not a short file).
package errwriter

import (
	"fmt"
	"io"
)

// Writer passes writes to its writer until one fails; from then on it
// writes nothing and every write returns that first error.
type Writer struct {
	w   io.Writer
	err error
}

// New returns a Writer writing to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

func (e *Writer) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	e.err = err
	return n, err
}

// Err is the first write error, or nil.
func (e *Writer) Err() error { return e.err }

// ExitCode is the exit code of a command named cmd that wrote its standard
// output through e and would exit with code: code, unless it is 0 and a
// write failed, which is then said on stderr and gives exit code 1.
func (e *Writer) ExitCode(code int, cmd string, stderr io.Writer) int {
	if code != 0 || e.err == nil {
		return code
	}
	fmt.Fprintf(stderr, "%s: writing to standard output: %v\n", cmd, e.err)
	return 1
}
