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
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/job"
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
	answers, err := sim.LoadAnswers(path)
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
		{[]string{"-problems", "5000", "-mode", "batch"}, []int{5000}, 5000, false},
		{[]string{"-mode", "batch", "-style", "grounded"}, nil, 0, true},
		{[]string{"-mode", "offline"}, nil, 0, true},
		{[]string{"-mode", "batch", "-batch-poll", "0s"}, nil, 0, true},
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

// TestParseBatchLine reads simllm's batch line (the format examples/simllm
// prints at shutdown) and finds none when the Batch API was not used.
func TestParseBatchLine(t *testing.T) {
	stderr := "simllm: stopped after 0 requests (by status: none sent)\n" +
		"simllm: batch API: 6 files uploaded (1 refused), 5 batches (completed 4, expired 1); rows answered 93938, failed 2, expired 7, cancelled 0; requests answered more than once: 3\n"
	sv, err := parseServed(stderr)
	if err != nil {
		t.Fatal(err)
	}
	want := batchServed{files: 6, refused: 1, batches: 5, byStatus: "completed 4, expired 1", answered: 93938, failed: 2, expired: 7, answeredTwiceOrMore: 3}
	if sv.requests != 0 || sv.batch != want {
		t.Errorf("got %d online, %+v; want 0, %+v", sv.requests, sv.batch, want)
	}
	if got := parseBatchLine("simllm: stopped after 3 requests (by status: 200 3)\n"); got != (batchServed{}) {
		t.Errorf("no batch line: got %+v", got)
	}
}

// TestBatchJobPutsEveryStageInBatchMode: the job -mode batch writes loads,
// with rollout, distill and judge in request_mode batch, OpenAI's limits
// and the poll interval asked for.
func TestBatchJobPutsEveryStageInBatchMode(t *testing.T) {
	dir := t.TempDir()
	o := &options{n: 8, concurrency: 512, style: "srar", mode: "batch", poll: 2 * time.Second}
	path := filepath.Join(dir, "job.yaml")
	if err := writeJob(path, "run", o, time.Second); err != nil {
		t.Fatal(err)
	}
	jb, err := job.LoadJobFile(path)
	if err != nil {
		t.Fatalf("the batch job does not load: %v", err)
	}
	for name, mode := range map[string]string{"rollout": jb.Rollout.Mode, "distill": jb.Distill.Mode, "judge": jb.Judge.Mode + "/" + jb.Judge.Endpoint.Mode} {
		if name == "judge" && mode != "batch/batch" || name != "judge" && mode != job.ModeBatch {
			t.Errorf("%s: mode %q, want batch", name, mode)
		}
	}
	b := jb.Batch
	if b.MaxRequests != 50_000 || b.MaxBytes != 200_000_000 || b.PollInterval != 2*time.Second || jb.Empirical.Enabled {
		t.Errorf("batch settings %+v, empirical %v", b, jb.Empirical.Enabled)
	}
}

// TestReadPhases adds up a batch's phases from its journal lines and the
// log's debug lines, and counts the waves.
func TestReadPhases(t *testing.T) {
	run := t.TempDir()
	if err := os.MkdirAll(filepath.Join(run, "batches"), 0o755); err != nil {
		t.Fatal(err)
	}
	journal := `{"local":"b000001","rows":100,"bytes":5000,"phase":"written","created":"2026-11-25T10:00:00Z","updated":"2026-11-25T10:00:02Z"}
{"local":"b000001","rows":100,"bytes":5000,"phase":"uploaded","file_id":"file-1","created":"2026-11-25T10:00:00Z","updated":"2026-11-25T10:00:03.5Z"}
{"local":"b000001","rows":100,"bytes":5000,"phase":"submitted","status":"validating","batch_id":"batch_1","created":"2026-11-25T10:00:00Z","updated":"2026-11-25T10:00:04Z"}
{"local":"b000001","rows":100,"bytes":5000,"phase":"submitted","status":"in_progress","batch_id":"batch_1","created":"2026-11-25T10:00:00Z","updated":"2026-11-25T10:00:05Z"}
{"local":"b000001","rows":100,"bytes":5000,"phase":"submitted","status":"completed","batch_id":"batch_1","created":"2026-11-25T10:00:00Z","updated":"2026-11-25T10:00:09Z"}
{"local":"b000001","rows":100,"bytes":5000,"phase":"ingested","status":"completed","batch_id":"batch_1","created":"2026-11-25T10:00:00Z","updated":"2026-11-25T10:00:11Z"}
{"local":"b000001","rows":10`
	if err := os.WriteFile(filepath.Join(run, "batches", "journal.jsonl"), []byte(journal), 0o644); err != nil {
		t.Fatal(err)
	}
	log := `distill: 0/10 done
time=2026-11-25T10:00:03.500Z level=DEBUG msg="batch uploaded" batch=b000001 bytes=5000 took=1s
time=2026-11-25T10:00:09.750Z level=DEBUG msg="batch downloaded" batch=b000001 files=1 bytes=7000 took=750ms
time=2026-11-25T10:00:11.000Z level=INFO msg="batch ingested" batch=b000001 answered=100 failed=0 missing=0
time=2026-11-25T10:00:11.010Z level=DEBUG msg="batch wave" problems=12
`
	logPath := filepath.Join(run, "full.log")
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := readPhases(run, logPath)
	if err != nil {
		t.Fatal(err)
	}
	want := phases{batches: 1, waves: 1, rows: 100, inBytes: 5000, outBytes: 7000,
		write: 2 * time.Second, queue: 500 * time.Millisecond, upload: time.Second, create: 500 * time.Millisecond,
		provider: 5 * time.Second, download: 750 * time.Millisecond, ingest: 1250 * time.Millisecond,
		maxWrite: 2 * time.Second, maxUpload: time.Second, maxProvider: 5 * time.Second, maxDownload: 750 * time.Millisecond, maxIngest: 1250 * time.Millisecond}
	if p != want {
		t.Errorf("phases\n got %+v\nwant %+v", p, want)
	}
	c, err := countJournal(run)
	if err != nil || c.batches != 1 || c.submitted != 1 || c.open != 0 || !c.ids["batch_1"] {
		t.Errorf("countJournal = %+v, %v", c, err)
	}
}
