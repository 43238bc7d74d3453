package main

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/llmtest"
)

// TestParseServed reads the line simllm prints when it stops (the format
// examples/simllm's tests pin), including a session that sent nothing.
func TestParseServed(t *testing.T) {
	tests := []struct {
		name, stderr string
		total        int64
		byStatus     map[string]int64
		wantErr      bool
	}{
		{"answered and cut", "settings\nsimllm: stopped after 10 requests (by status: 200 7, 503 1, none 2)\n", 10,
			map[string]int64{"200": 7, "503": 1, "none": 2}, false},
		{"nothing sent", "simllm: stopped after 0 requests (by status: none sent)\n", 0, map[string]int64{}, false},
		{"old format", "simllm: stopped after 3 requests\n", 0, nil, true},
		{"bad count", "simllm: stopped after 3 requests (by status: 200 x)\n", 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv, err := parseServed(tt.stderr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if sv.requests != tt.total || !maps.Equal(sv.byStatus, tt.byStatus) {
				t.Errorf("got %d %v, want %d %v", sv.requests, sv.byStatus, tt.total, tt.byStatus)
			}
			if got, want := sv.noReply(), tt.total-tt.byStatus["200"]; got != want {
				t.Errorf("noReply = %d, want %d", got, want)
			}
		})
	}
}

// TestProblemsAreDistinctAndKnownToTheEndpoint: every generated problem is
// a different text, and the simulated endpoint loads each with its answer
// (otherwise it would answer every rollout wrong and selection would drop
// every problem).
func TestProblemsAreDistinctAndKnownToTheEndpoint(t *testing.T) {
	const n = 3000
	path := filepath.Join(t.TempDir(), "p.jsonl")
	if err := writeProblems(path, n); err != nil {
		t.Fatal(err)
	}
	answers, err := llmtest.LoadAnswers(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != n {
		t.Fatalf("the endpoint knows %d distinct problems, want %d", len(answers), n)
	}
	if got := answers["Compute 2 + 3."]; got != "5" {
		t.Errorf("answer of the first problem = %q, want 5", got)
	}
}

// TestFlags: sizes are parsed, the kill runs at the smallest size unless
// told, and a kill size that is not measured is a usage error.
func TestFlags(t *testing.T) {
	tests := []struct {
		args     []string
		sizes    []int
		killSize int
		wantErr  bool
	}{
		{[]string{"-problems", "10000,100000"}, []int{10000, 100000}, 10000, false},
		{[]string{"-problems", "100000, 5000"}, []int{100000, 5000}, 5000, false},
		{[]string{"-problems", "5000", "-kill-size", "0"}, []int{5000}, 0, false},
		{[]string{"-problems", "5000", "-kill-size", "7000"}, nil, 0, true},
		{[]string{"-problems", "5000,x"}, nil, 0, true},
		{[]string{"-concurrency", "0"}, nil, 0, true},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args, io.Discard)
		if (err != nil) != tt.wantErr {
			t.Errorf("%v: err = %v, want error %v", tt.args, err, tt.wantErr)
			continue
		}
		if err == nil && (!slices.Equal(o.sizes, tt.sizes) || o.killSize != tt.killSize) {
			t.Errorf("%v: sizes %v kill %d, want %v kill %d", tt.args, o.sizes, o.killSize, tt.sizes, tt.killSize)
		}
	}
}

// TestDocumentsAreOnePassageEach: the grounded bench's documents are
// distinct rows with an id, a title and a text shorter than the job's
// passage size, so every document is one passage and none is a duplicate.
func TestDocumentsAreOnePassageEach(t *testing.T) {
	const n = 500
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := writeDocuments(path, n); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		var d struct{ ID, Title, Text string }
		if err := json.Unmarshal([]byte(line), &d); err != nil || d.ID == "" || d.Title == "" {
			t.Fatalf("row %q: %v", line, err)
		}
		if len(d.Text) >= 6000 || texts[d.Text] {
			t.Errorf("document %s: %d bytes, repeated %v", d.ID, len(d.Text), texts[d.Text])
		}
		texts[d.Text] = true
	}
	if len(texts) != n {
		t.Errorf("%d distinct documents, want %d", len(texts), n)
	}
}
