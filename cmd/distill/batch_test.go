package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestBatchFlagParsing: --batch alone, with its stages after a space or
// after =, and --batch-files alone put the job's sections in the modes they
// promise; an unknown stage is a usage error naming it.
func TestBatchFlagParsing(t *testing.T) {
	type modes struct{ Rollout, Distill, Judge, Empirical string }
	base := []string{"--input", "p.jsonl", "--out", "runs/x", "--base-url", "http://127.0.0.1:1/v1", "--model", "m"}
	for _, tc := range []struct {
		name  string
		args  []string
		want  modes
		files string
	}{
		{"absent", nil, modes{"", "", "", ""}, ""},
		{"bare at the end", []string{"--batch"}, modes{"auto", "auto", "auto", "auto"}, ""},
		{"bare before a flag", []string{"--batch", "--n", "4"}, modes{"auto", "auto", "auto", "auto"}, ""},
		{"list after a space", []string{"--batch", "distill,judge", "--n", "4"}, modes{"", "batch", "batch", ""}, ""},
		{"single dash and a space", []string{"-batch", "rollout"}, modes{"batch", "", "", ""}, ""},
		{"list after =", []string{"--batch=judge,empirical"}, modes{"", "", "batch", "batch"}, ""},
		{"grounded stage names distill", []string{"--batch", "synthesize"}, modes{"", "batch", "", ""}, ""},
		{"off", []string{"--batch=false"}, modes{"online", "online", "online", "online"}, ""},
		{"files alone: every stage", []string{"--batch-files", "off"}, modes{"auto", "auto", "auto", "auto"}, "off"},
		{"files with stages", []string{"--batch-files", "off", "--batch", "distill"}, modes{"", "batch", "", ""}, "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFlags()
			var stderr bytes.Buffer
			if ok, code := parseFlags(f.fs, batchArgs(append(append([]string{}, base...), tc.args...)), f.usage, &stderr); !ok {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if f.fs.NArg() != 0 {
				t.Fatalf("arguments left: %q", f.fs.Args())
			}
			job := pipeline.DefaultJob()
			for _, apply := range f.apply {
				apply(&job)
			}
			got := modes{job.Rollout.Endpoint.Mode, job.Distill.Endpoint.Mode, job.Judge.Endpoint.Mode, job.Empirical.Endpoint.Mode}
			if got != tc.want {
				t.Errorf("modes %+v, want %+v", got, tc.want)
			}
			if job.Batch.FilesDir != tc.files {
				t.Errorf("files dir %q, want %q", job.Batch.FilesDir, tc.files)
			}
			if job.Rollout.N != 4 && slices.Contains(tc.args, "--n") {
				t.Errorf("--n after --batch was not parsed: n=%d", job.Rollout.N)
			}
		})
	}
	f := newRunFlags()
	var stderr bytes.Buffer
	parseFlags(f.fs, batchArgs([]string{"--batch-poll", "2m", "--batch-max-requests", "1000", "--batch-max-bytes", "5000000"}), f.usage, &stderr)
	job := pipeline.DefaultJob()
	for _, apply := range f.apply {
		apply(&job)
	}
	if b := job.Batch; b.PollInterval != 2*time.Minute || b.MaxRequests != 1000 || b.MaxBytes != 5_000_000 {
		t.Errorf("batch settings %+v", b)
	}

	for _, tc := range []struct {
		args []string
		bad  string
	}{
		{[]string{"run", "--batch", "distill,jugde"}, "jugde"},
		{[]string{"run", "--batch=rollouts"}, "rollouts"},
		{[]string{"plan", "--sample", "3", "--batch", "judge,empirical,analyse"}, "analyse"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append(tc.args, base...), &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), `unknown stage "`+tc.bad+`"`) {
			t.Errorf("%v: stderr does not name the stage %q:\n%s", tc.args, tc.bad, stderr.String())
		}
	}
}

// startBatchSim starts a simulated endpoint with a Batch API.
func startBatchSim(t *testing.T, answers map[string]string, turnaround time.Duration) (*llmtest.Server, string) {
	t.Helper()
	srv, url, stop, err := llmtest.Start(llmtest.Config{Answers: answers, BatchTurnaround: turnaround, BatchDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv, url
}

// TestBatchRunEndToEnd: distill run --batch against an endpoint with a
// Batch API sends every request in batches, finishes (exit 0) with every
// batch answered and ingested, and distill status and batches list show
// the batches.
func TestBatchRunEndToEnd(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 16)
	srv, url := startBatchSim(t, answers, 50*time.Millisecond)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "4",
		"--batch", "--batch-poll", "20ms", "--quiet"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d requests sent online; --batch on an endpoint with a Batch API sends none", n)
	}
	st := srv.BatchStats()
	if st.BatchesCreated < 3 || st.Batches[llmtest.BatchCompleted] != int(st.BatchesCreated) {
		t.Errorf("batches %+v: want a wave each for rollout, distill and the judges, all completed", st)
	}
	if st.RequestsRepeated != 0 || st.CustomIDsRepeated != 0 {
		t.Errorf("requests answered twice: %+v", st)
	}
	want := llm.BatchSummary{Completed: int(st.BatchesCreated)}.String()
	if !strings.Contains(stdout.String(), "batches: "+want) {
		t.Errorf("the run's summary does not say %q:\n%s", "batches: "+want, stdout.String())
	}

	stdout.Reset()
	if code := run([]string{"status", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "batches: "+want) {
		t.Errorf("status does not say %q:\n%s", "batches: "+want, stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"status", "--json", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status --json exit %d: %s", code, stderr.String())
	}
	var sj struct {
		Batches *llm.BatchSummary `json:"batches"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sj); err != nil || sj.Batches == nil || sj.Batches.Completed != int(st.BatchesCreated) {
		t.Errorf("status --json batches %+v (%v):\n%s", sj.Batches, err, stdout.String())
	}

	stdout.Reset()
	if code := run([]string{"batches", "list", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("batches list exit %d: %s", code, stderr.String())
	}
	states, err := pipeline.ReadBatches(out)
	if err != nil || len(states) != int(st.BatchesCreated) {
		t.Fatalf("journal: %d states (%v)", len(states), err)
	}
	for _, s := range states {
		line := lineWith(stdout.String(), s.Local)
		for _, want := range []string{llm.PhaseIngested, "completed", s.BatchID, s.FileID} {
			if !strings.Contains(line, want) {
				t.Errorf("batches list line of %s does not show %q: %q", s.Local, want, line)
			}
		}
	}
	if !reflect.DeepEqual(sj.Batches, &llm.BatchSummary{Completed: len(states)}) {
		t.Errorf("status batches %+v", sj.Batches)
	}
}

// lineWith is the first line of s holding sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
