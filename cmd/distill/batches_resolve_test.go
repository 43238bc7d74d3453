package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestBatchesResolve: a batch the provider no longer knows is marked lost
// by the run, which stops saying how to resolve it; distill batches list
// shows it, cancel does not fail on it, resolve refuses an id that is not
// this batch's, takes one that is (a batch of its input file), and the
// next run ingests that batch and finishes without making another; or
// resolve --forget has its rows asked again.
func TestBatchesResolve(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 6)
	srv, url := startBatchSim(t, answers, 1500*time.Millisecond)
	out := filepath.Join(dir, "run")
	args := []string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "2",
		"--batch", "rollout", "--batch-poll", "50ms", "--quiet"}
	first := exec.Command(bin, args...)
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the batch to be submitted", func() bool {
		states, _ := pipeline.ReadBatches(out)
		return len(states) == 1 && states[0].Phase == llm.PhaseSubmitted
	})
	lostID := srv.BatchIDs()[0]
	if err := srv.DropBatch(lostID); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); !exitedWith(err, exitStopped) {
		t.Fatalf("the run whose batch the provider lost: %v, want exit %d\n%s", err, exitStopped, firstErr.String())
	}
	if !strings.Contains(firstErr.String(), "distill batches resolve") || strings.Contains(firstErr.String(), "model name") {
		t.Errorf("the run's last words:\n%s", firstErr.String())
	}
	lost := batchState(t, out, "b000001")
	if lost.Phase != llm.PhaseLost {
		t.Fatalf("b000001 is %s, want lost", lost.Phase)
	}

	var stdout, stderr bytes.Buffer
	if code := run([]string{"batches", "list", out}, &stdout, &stderr); code != exitOK || !strings.Contains(lineWith(stdout.String(), "b000001"), "lost") {
		t.Errorf("batches list (exit %d):\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"batches", "cancel", out}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "lost") {
		t.Errorf("batches cancel of a lost batch (exit %d):\n%s%s", code, stdout.String(), stderr.String())
	}

	// Someone finds the batch's rows at the provider: here, a batch of
	// the same input file (the provider kept the file).
	api, err := llm.NewBatchAPI(llm.Endpoint{BaseURL: url}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other := srv.BatchIDs()
	srv.SeedBatches(1)
	stranger := srv.BatchIDs()[len(other)]
	found, err := api.CreateBatch(context.Background(), lost.FileID, "24h", nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"batches", "resolve", out, "b000001", "--id", stranger}, &stdout, &stderr); code != exitFailed ||
		!strings.Contains(stderr.String(), lost.FileID) {
		t.Errorf("resolve with another batch's id: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"batches", "resolve", out, "b000001", "--id", found.ID}, &stdout, &stderr); code != exitOK {
		t.Fatalf("resolve --id: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	created := srv.BatchStats().BatchesCreated
	stdout.Reset()
	stderr.Reset()
	// The cancel above asked for no new batch: this run ingests the
	// resolved batch and stops (batch_cancelled); the next one finishes.
	if code := run(args, &stdout, &stderr); code != exitStopped {
		t.Fatalf("the run after resolve and cancel: exit %d\n%s\n%s", code, stderr.String(), stdout.String())
	}
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("the run after that: exit %d\n%s\n%s", code, stderr.String(), stdout.String())
	}
	if s := batchState(t, out, "b000001"); s.Phase != llm.PhaseIngested || s.BatchID != found.ID {
		t.Errorf("b000001 after the run: %s %s, want ingested from %s", s.Phase, s.BatchID, found.ID)
	}
	if made := srv.BatchStats().BatchesCreated; made != created {
		t.Errorf("the run made %d batches more; the resolved one answers its rows", made-created)
	}
}

// TestBatchesResolveForget: resolve --forget has a lost batch's rows asked
// again by the next run, and refuses a batch that is not lost.
func TestBatchesResolveForget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 4)
	srv, url := startBatchSim(t, answers, 20*time.Millisecond)
	out := filepath.Join(dir, "run")
	args := []string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "2",
		"--batch", "rollout", "--batch-poll", "20ms", "--quiet"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if code := run([]string{"batches", "resolve", out, "b000001", "--forget"}, &stdout, &stderr); code != exitFailed ||
		!strings.Contains(stderr.String(), "not lost") {
		t.Errorf("resolve of an ingested batch: exit %d\n%s", code, stderr.String())
	}
	// Mark it lost, as a run would have: the journal's last word on it.
	s := batchState(t, out, "b000001")
	s.Phase = llm.PhaseLost
	if err := llm.AppendBatchState(pipeline.BatchDir(out), s); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"batches", "resolve", out, "b000001", "--forget"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("resolve --forget: exit %d\n%s", code, stderr.String())
	}
	if s := batchState(t, out, "b000001"); s.Phase != llm.PhaseDropped {
		t.Errorf("b000001 after --forget: %s", s.Phase)
	}
	if _, err := os.Stat(filepath.Join(pipeline.BatchDir(out), "b000001.rows")); err == nil {
		t.Error("the forgotten batch's rows file is still there")
	}
	created := srv.BatchStats().BatchesCreated
	if code := run(args, &stdout, &stderr); code != exitOK { // its rows were answered: the cache has them
		t.Fatalf("the run after --forget: exit %d\n%s", code, stderr.String())
	}
	if made := srv.BatchStats().BatchesCreated - created; made != 0 {
		t.Errorf("the run after --forget made %d batches for rows the cache answers", made)
	}
}
