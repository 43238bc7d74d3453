package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
)

// TestValidateReportsTheReview: once review logs sit beside the corpus,
// validate's text report ends with their coverage and kappa; a log of
// another corpus is refused by validate review and named by validate.
func TestValidateReportsTheReview(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 2); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runValidate([]string{run}, &stdout, &stderr); code != exitOK || strings.Contains(stdout.String(), "People's review") {
		t.Fatalf("without logs: exit %d, review section shown %v\n%s", code, strings.Contains(stdout.String(), "People's review"), stderr.String())
	}

	// The judge says item 3 of r00 is invalid; alice rejects it and accepts
	// the other four items of r00.
	path := review.LogPath(run, "alice")
	in := mustFingerprint(t, run)
	l, err := review.OpenLog(path, "alice", in, run, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := reviewtest.Records(1)
	for _, it := range recs[0].Rubric {
		action := review.ActionAccept
		if it.ID == 3 {
			action = review.ActionReject
		}
		if _, err := l.Append(review.Entry{Time: time.Now(), Record: "r00", Item: it.ID, Action: action,
			Before: &review.ItemState{Type: it.Type, Text: it.Text, Weight: it.Weight}}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	stdout.Reset()
	if code := runValidate([]string{run}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"People's review", "coverage: 5 of 10 items decided (50.0%)", "stored judge / alice", "1.00 (almost perfect)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout.String())
		}
	}

	// A log written for another corpus.
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte(in), []byte("ffffffffffffffff"), 1)
	os.WriteFile(path, data, 0o644)
	stderr.Reset()
	code := runValidate([]string{"review", run, "--reviewer", "alice", "--addr", "127.0.0.1:0"}, &stdout, &stderr)
	if code != exitFailed || !strings.Contains(stderr.String(), "was written for the corpus with fingerprint ffffffffffffffff") {
		t.Fatalf("validate review on another corpus's log: exit %d\n%s", code, stderr.String())
	}
	stderr.Reset()
	runValidate([]string{run}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "belongs to another corpus") {
		t.Fatalf("validate said nothing of the foreign log:\n%s", stderr.String())
	}
}

func runValidate(args []string, stdout, stderr *bytes.Buffer) int {
	return run(args, stdout, stderr, func(string) string { return "" })
}

func mustFingerprint(t *testing.T, run string) string {
	t.Helper()
	in, code, ok := openCorpus("test", []string{run}, env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	if !ok {
		t.Fatalf("exit %d", code)
	}
	fp, err := review.Fingerprint(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}
