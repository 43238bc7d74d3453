package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// TestValidateSaysTheRunIsStillBeingWritten: validate on a run directory a
// run holds says it reads the records committed so far.
func TestValidateSaysTheRunIsStillBeingWritten(t *testing.T) {
	t.Parallel()
	dir := writeRun(t, 20, nil)
	r, err := corpus.Open(dir, corpus.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, _, stderr := validate(t, nil, dir)
	if !strings.Contains(stderr, "still being written") {
		t.Errorf("stderr: %q", stderr)
	}
}
