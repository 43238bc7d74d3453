package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
)

// writeLog writes reviewer's log of run with fingerprint fp: one decision
// on each item given, all of action.
func writeLog(t *testing.T, run, reviewer, fp, action string, at time.Time, items ...int32) string {
	t.Helper()
	path := review.LogPath(run, reviewer)
	l, err := review.OpenLog(path, reviewer, fp, run, at)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, it := range items {
		e := review.Entry{Time: at, Record: "r01", Item: it, Action: action,
			Before: &review.ItemState{Type: "SUGGEST", Text: "Checks the result against a small case worked out by hand.", Weight: 1}}
		if it == 1 {
			e.Before.Text = "States the counting principle the solution relies on before using it."
		}
		if _, err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestExportReview: distill export --review applies the logs, refuses a
// log of another corpus, and stops at conflicts unless --review-policy
// settles them; export.json, the card and the summary say what was done.
func TestExportReview(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	if err := reviewtest.DemoRun(runDir, 3); err != nil {
		t.Fatal(err)
	}
	fp := fingerprintOf(t, runDir)
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	alice := writeLog(t, runDir, "alice", fp, review.ActionReject, t0, 1, 2)
	bob := writeLog(t, runDir, "bob", fp, review.ActionAccept, t0.Add(time.Minute), 2)
	other := writeLog(t, filepath.Join(dir, "elsewhere"), "carol", "0000000000000000", review.ActionReject, t0, 1)

	tests := []struct {
		name     string
		args     []string
		code     int
		says     string // on stderr, or stdout when the export succeeds
		rejected int64
	}{
		{"conflict without a policy", []string{"--review", review.Dir(runDir)}, exitFailed, "record r01 item 2: alice reject, bob accept", 0},
		{"another corpus's log", []string{"--review", alice + "," + other}, exitFailed, "belongs to another corpus", 0},
		{"policy without logs", []string{"--review-policy", "latest"}, exitUsage, "--review-policy needs --review", 0},
		{"a bad policy", []string{"--review", alice, "--review-policy", "loudest"}, exitUsage, "not latest, unanimous or reviewer:NAME", 0},
		{"latest", []string{"--review", alice, bob, "--review-policy", "latest"}, exitOK, "review: 1 items rejected, 0 edited, 1 accepted", 1},
		{"reviewer:alice", []string{"--review", review.Dir(runDir), "--review-policy", "reviewer:alice"}, exitOK, "review: 2 items rejected", 2},
		{"one log", []string{"--review", alice}, exitOK, "alice: 2 rejected, 0 edited, 0 accepted", 2},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "export", string(rune('a'+i)))
			var stdout, stderr bytes.Buffer
			args := append([]string{"export", runDir, "--format", "jsonl", "--out", out}, tt.args...)
			code := run(args, &stdout, &stderr)
			said := stderr.String()
			if code == exitOK {
				said = stdout.String()
			}
			if code != tt.code || !strings.Contains(said, tt.says) {
				t.Fatalf("exit %d, said:\n%s%s\nwant exit %d saying %q", code, stdout.String(), stderr.String(), tt.code, tt.says)
			}
			if code != exitOK {
				return
			}
			m, err := corpus.ReadExportManifest(out)
			if err != nil || m.Review == nil || m.Review.ItemsRejected != tt.rejected {
				t.Fatalf("export.json review %+v, %v", m.Review, err)
			}
			card, _ := os.ReadFile(filepath.Join(out, corpus.DatasetCardName))
			if !strings.Contains(string(card), "## People's review") || !strings.Contains(string(card), "--review ") {
				t.Fatalf("the card does not tell of the review:\n%s", card)
			}
		})
	}
}

func fingerprintOf(t *testing.T, run string) string {
	t.Helper()
	in, err := audit.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := review.Fingerprint(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}
