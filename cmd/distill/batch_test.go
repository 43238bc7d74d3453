package main

import (
	"github.com/rubricforge/rubricforge/corpus"

	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/job"
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
			job := job.DefaultJob()
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
	for _, cmd := range []string{"run", "plan"} {
		var help bytes.Buffer
		run([]string{cmd, "-h"}, io.Discard, &help)
		for _, flag := range []string{"-batch", "-batch-files", "-batch-poll", "-batch-max-requests", "-batch-max-bytes"} {
			i := strings.Index(help.String(), "  "+flag+" ")
			if i < 0 {
				i = strings.Index(help.String(), "  "+flag+"\n")
			}
			text := ""
			if i >= 0 {
				text = help.String()[i+2:]
				if end := strings.Index(text, "\n  -"); end >= 0 {
					text = text[:end]
				}
			}
			if !strings.Contains(text, "e.g.") {
				t.Errorf("%s -h does not explain %s with an example", cmd, flag)
			}
		}
	}
	f := newRunFlags()
	var stderr bytes.Buffer
	parseFlags(f.fs, batchArgs([]string{"--batch-poll", "2m", "--batch-max-requests", "1000", "--batch-max-bytes", "5000000"}), f.usage, &stderr)
	job := job.DefaultJob()
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
func startBatchSim(t *testing.T, answers map[string]string, turnaround time.Duration) (*sim.Server, string) {
	t.Helper()
	srv, url, stop, err := sim.Start(sim.Config{Answers: answers, BatchTurnaround: turnaround, BatchDir: t.TempDir()})
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
	t.Parallel()
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
	if st.BatchesCreated < 3 || st.Batches[sim.BatchCompleted] != int(st.BatchesCreated) {
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

// TestBatchFilesWaveByWave: with --batch-files DIR a run writes each wave's
// input file to DIR and stops (exit 4, saying what to run); the test runs
// each file as vLLM's run-batch would, through the simulated endpoint's
// chat completions, and runs distill again, wave by wave, until the corpus
// is finished (exit 0). No request is answered twice.
func TestBatchFilesWaveByWave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 12)
	srv, url := startBatchSim(t, answers, 0)
	out, files := filepath.Join(dir, "run"), filepath.Join(dir, "offline")
	args := []string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "4",
		"--batch-files", files, "--quiet"}
	answered := map[string]bool{}
	for wave := 1; ; wave++ {
		if wave > 12 {
			t.Fatalf("not finished after %d waves", wave-1)
		}
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code == exitOK {
			t.Logf("finished in wave %d", wave)
			if wave < 3 {
				t.Errorf("finished in wave %d; rollouts, distill and the judges need a wave each", wave)
			}
			break
		}
		if code != exitStopped {
			t.Fatalf("wave %d: exit %d\nstdout:\n%s\nstderr:\n%s", wave, code, stdout.String(), stderr.String())
		}
		var rep pipeline.Report
		readJSONFile(t, filepath.Join(out, "report.json"), &rep)
		if rep.StoppedBy != pipeline.StopBatchFiles || !strings.Contains(stderr.String(), "run_batch") || !strings.Contains(stderr.String(), files) {
			t.Fatalf("wave %d: stopped by %q; stderr does not say which files to run:\n%s", wave, rep.StoppedBy, stderr.String())
		}
		inputs, _ := filepath.Glob(filepath.Join(files, "*.input.jsonl"))
		fresh := 0
		for _, in := range inputs {
			if answered[in] {
				continue
			}
			answered[in] = true
			fresh++
			runBatchFileLikeVLLM(t, url, in, strings.TrimSuffix(in, ".input.jsonl")+".output.jsonl")
		}
		if wave == 1 && !answered[filepath.Join(files, "b000001.input.jsonl")] {
			t.Fatalf("the first wave wrote %v, not b000001.input.jsonl", inputs)
		}
		t.Logf("wave %d: %d new batch file(s): %s", wave, fresh, strings.TrimSpace(stderr.String()))
		if fresh == 0 {
			t.Fatalf("wave %d stopped for batch files but wrote no new one (%v)", wave, inputs)
		}
	}
	st := srv.BatchStats()
	if st.RequestsRepeated != 0 {
		t.Errorf("%d requests answered twice", st.RequestsRepeated)
	}
	if st.BatchesCreated != 0 {
		t.Errorf("%d batches sent to the endpoint; --batch-files sends none", st.BatchesCreated)
	}
	states, err := pipeline.ReadBatches(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.Phase != llm.PhaseIngested || s.Answered != s.Rows {
			t.Errorf("batch %s: phase %s, %d of %d rows answered", s.Local, s.Phase, s.Answered, s.Rows)
		}
	}
	var rep pipeline.Report
	readJSONFile(t, filepath.Join(out, "report.json"), &rep)
	if rep.Problems.Done+rep.Problems.LeftOut != 12 || rep.LLM.Total.BatchAnswers == 0 {
		t.Errorf("report: %+v, %d batch answers", rep.Problems, rep.LLM.Total.BatchAnswers)
	}
}

// runBatchFileLikeVLLM answers a batch input file as vLLM's run-batch does:
// one output line per input line, each the chat completion the endpoint
// gives for the line's body.
func runBatchFileLikeVLLM(t *testing.T, url, in, out string) {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var req struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(line, &req); err != nil || req.Method != "POST" || req.URL != "/v1/chat/completions" || req.CustomID == "" {
			t.Fatalf("%s line %d is not a batch request (%v): %s", in, i+1, err, line)
		}
		resp, err := http.Post(url+"/chat/completions", "application/json", bytes.NewReader(req.Body))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s line %d: HTTP %d: %s (%v)", in, i+1, resp.StatusCode, body, err)
		}
		o, _ := json.Marshal(map[string]any{
			"id": fmt.Sprintf("vllm-%d", i), "custom_id": req.CustomID, "error": nil,
			"response": map[string]any{"status_code": 200, "request_id": fmt.Sprintf("vllm-batch-%d", i), "body": json.RawMessage(body)},
		})
		b.Write(append(o, '\n'))
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestBatchesCancel: batches that take minutes are cancelled with distill
// batches cancel, once while the run polls them (it ingests what they
// answered, submits nothing new and stops: batch_cancelled, exit 4), and
// once after the run was killed (the next run does the same). The run in
// between resubmits only the rows the cancelled batch did not answer, and
// no request is ever answered twice.
func TestBatchesCancel(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	const problems, n = 40, 4
	answers := writeProblems(t, input, problems)
	srv, url := startBatchSim(t, answers, 2*time.Minute) // a row every 0.75 s
	out := filepath.Join(dir, "run")
	args := []string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", fmt.Sprint(n),
		"--batch", "--batch-poll", "100ms", "--quiet"}
	submitted := func(local string) bool {
		states, _ := pipeline.ReadBatches(out)
		for _, s := range states {
			if s.Local == local && s.Phase == llm.PhaseSubmitted {
				return true
			}
		}
		return false
	}
	cancel := func(wantBatch string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run([]string{"batches", "cancel", out}, &stdout, &stderr); code != exitOK {
			t.Fatalf("batches cancel: exit %d\n%s%s", code, stdout.String(), stderr.String())
		}
		line := lineWith(stdout.String(), wantBatch)
		if !strings.Contains(line, "cancel") || !strings.Contains(line, "rows done") || !strings.Contains(stdout.String(), "cancelled 1 of 1 open batches") {
			t.Errorf("batches cancel output:\n%s", stdout.String())
		}
		t.Logf("distill batches cancel:\n%s", stdout.String())
	}

	// The run polls the batch while it is cancelled.
	first := exec.Command(bin, args...)
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	// The endpoint's count first: reading the journal every tick, under
	// the race detector, cost more CPU than the rest of the test.
	waitUntil(t, "the first batch to be submitted and answer some rows", func() bool {
		return srv.BatchStats().RowsAnswered >= 3 && submitted("b000001")
	})
	var live bytes.Buffer
	if code := run([]string{"status", out}, &live, io.Discard); code != exitOK || !strings.Contains(live.String(), "batches: 1 in progress (") || !strings.Contains(live.String(), " of 160 done)") {
		t.Errorf("status while the run polls its batch (exit %d):\n%s", code, live.String())
	}
	t.Logf("distill status while the run polls:\n%s", live.String())
	cancel("b000001")
	select {
	case err := <-exited:
		if !exitedWith(err, exitStopped) {
			t.Fatalf("the run whose batches were cancelled: %v, want exit %d\n%s", err, exitStopped, firstErr.String())
		}
	case <-time.After(time.Minute):
		first.Process.Kill()
		t.Fatalf("the run did not stop within a minute of its batches' cancellation\n%s", firstErr.String())
	}
	checkCancelledStop(t, out, firstErr.String())
	answered1 := srv.BatchStats().RowsAnswered
	if st := srv.BatchStats(); st.BatchesCreated != 1 {
		t.Errorf("%d batches created; the run submits none after its batches are cancelled", st.BatchesCreated)
	}
	b1 := batchState(t, out, "b000001")
	if b1.Phase != llm.PhaseIngested || int64(b1.Answered) != answered1 || b1.Answered+b1.Failed+b1.Missing != problems*n {
		t.Errorf("the cancelled batch: %+v; the endpoint answered %d rows", b1, answered1)
	}

	// The next run resubmits only what the cancelled batch did not answer;
	// it is killed, and its batch cancelled.
	second := exec.Command(bin, args...)
	next := fmt.Sprintf("b%06d", len(readStates(t, out))+1)
	killed := runUntil(t, second, func() bool {
		return srv.BatchStats().RowsAnswered >= answered1+2 && submitted(next)
	})
	if !killed {
		t.Fatal("the second run ended before its batch answered")
	}
	rows := batchRows(t, filepath.Join(pipeline.BatchDir(out), next+".input.jsonl"))
	for _, r := range rows {
		if srv.CustomIDAnswers(r.customID) > 1 {
			t.Errorf("row %s of %s was answered before", r.customID, next)
		}
	}
	if rollouts, want := batchState(t, out, next).Stages[job.StageRollout], problems*n-int(answered1); rollouts != want {
		t.Errorf("the resubmitted batch holds %d rollout rows; the cancelled one left %d unanswered", rollouts, want)
	}
	cancel(next)
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitStopped {
		t.Fatalf("the run after the cancel: exit %d, want %d\n%s", code, exitStopped, stderr.String())
	}
	checkCancelledStop(t, out, stderr.String())
	t.Logf("distill run after distill batches cancel:\n%s", stderr.String())
	if b := batchState(t, out, next); b.Phase != llm.PhaseIngested || b.Answered < 2 {
		t.Errorf("the second cancelled batch: %+v", b)
	}
	st := srv.BatchStats()
	if st.BatchesCreated != 2 {
		t.Errorf("%d batches created, want 2: none after a cancellation", st.BatchesCreated)
	}
	if st.RequestsRepeated != 0 || st.CustomIDsRepeated != 0 || srv.Count() != 0 {
		t.Errorf("requests answered twice (%d, %d custom ids) or online (%d)", st.RequestsRepeated, st.CustomIDsRepeated, srv.Count())
	}
	stdout.Reset()
	if code := run([]string{"status", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status: exit %d: %s", code, stderr.String())
	}
	t.Logf("distill status:\n%s", stdout.String())
	if !strings.Contains(stdout.String(), "batches: 2 cancelled") || !strings.Contains(stdout.String(), "batches were cancelled") {
		t.Errorf("status after the cancellations:\n%s", stdout.String())
	}
}

// checkCancelledStop checks a run stopped because its batches were
// cancelled, and said so.
func checkCancelledStop(t *testing.T, out, stderr string) {
	t.Helper()
	var rep pipeline.Report
	readJSONFile(t, filepath.Join(out, "report.json"), &rep)
	if rep.Status != pipeline.StatusStopped || rep.StoppedBy != pipeline.StopBatchCancelled {
		t.Errorf("report: status %s, stopped by %q (%s); want stopped by %s", rep.Status, rep.StoppedBy, rep.StopReason, pipeline.StopBatchCancelled)
	}
	if !strings.Contains(stderr, "cancelled") || !strings.Contains(stderr, "run again") {
		t.Errorf("stderr does not say the batches were cancelled and what to do:\n%s", stderr)
	}
}

func readStates(t *testing.T, out string) []llm.BatchState {
	t.Helper()
	states, err := pipeline.ReadBatches(out)
	if err != nil {
		t.Fatal(err)
	}
	return states
}

func batchState(t *testing.T, out, local string) llm.BatchState {
	t.Helper()
	for _, s := range readStates(t, out) {
		if s.Local == local {
			return s
		}
	}
	t.Fatalf("no batch %s in the journal", local)
	return llm.BatchState{}
}

type batchRow struct{ customID string }

// batchRows reads a batch input file.
func batchRows(t *testing.T, path string) []batchRow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []batchRow
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r struct {
			CustomID string `json:"custom_id"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, batchRow{r.CustomID})
	}
	return rows
}

// TestPlanBatchPrices: distill plan --batch distill,judge runs its pilot
// online (no batch waits) and prices the distill and judge stages at the
// batch rate: half of what the same plan without --batch projects for
// them, the rollouts at the same price.
func TestPlanBatchPrices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 20)
	srv, url := startBatchSim(t, answers, time.Hour)
	jb := filepath.Join(dir, "job.yaml")
	os.WriteFile(jb, []byte("prices: {simulated: {prompt_per_mtok: 2, completion_per_mtok: 8}}\n"), 0o644)
	plan := func(out string, extra ...string) *corpus.PlanDoc {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := append([]string{"plan", "--config", jb, "--sample", "5", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--quiet"}, extra...)
		if code := run(args, &stdout, &stderr); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", extra, code, stdout.String(), stderr.String())
		}
		if len(extra) > 0 && !strings.Contains(stdout.String(), "batch mode: distill, judge priced at the batch rate") {
			t.Errorf("the plan does not say which stages it priced at the batch rate:\n%s", stdout.String())
		}
		p, err := corpus.ReadPlan(out)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	online, batch := plan(filepath.Join(dir, "online")), plan(filepath.Join(dir, "batch"), "--batch", "distill,judge")
	if st := srv.BatchStats(); st.BatchesCreated != 0 {
		t.Errorf("the pilot created %d batches; it runs online", st.BatchesCreated)
	}
	cost := func(p *corpus.PlanDoc, stage string) float64 {
		for _, s := range p.Stages {
			if s.Stage == stage {
				return s.CostUSD.Value
			}
		}
		t.Fatalf("no stage %s in the plan", stage)
		return 0
	}
	for stage, rate := range map[string]float64{job.StageRollout: 1, job.StageDistill: llm.DefaultBatchRate, job.StageJudge: llm.DefaultBatchRate} {
		on, b := cost(online, stage), cost(batch, stage)
		if on <= 0 || math.Abs(b-rate*on) > 1e-9*on {
			t.Errorf("%s: online plan $%.6f, batch plan $%.6f; want %.1f times", stage, on, b, rate)
		}
	}
}

// TestBatchJobFileSettings: request_mode per section and the batch:
// settings of a job file are read (files_dir, like every path in a job
// file, relative to the file), and --batch overrides request_mode.
func TestBatchJobFileSettings(t *testing.T) {
	dir := t.TempDir()
	jb := filepath.Join(dir, "job.yaml")
	os.WriteFile(jb, []byte(`input: {paths: [p.jsonl]}
out: runs/x
rollout: {base_url: "http://127.0.0.1:1/v1", model: m}
distill: {request_mode: batch}
judge: {mode: item, request_mode: auto}
batch: {files_dir: offline, poll_interval: 2m, max_requests: 1000, max_bytes: 1000000}
`), 0o644)
	load := func(args ...string) job.Job {
		t.Helper()
		f := newRunFlags()
		if ok, code := parseFlags(f.fs, batchArgs(append([]string{"--config", jb}, args...)), f.usage, io.Discard); !ok {
			t.Fatalf("exit %d", code)
		}
		j, err := job.PrepareJob(jb, func(j *job.Job) {
			for _, apply := range f.apply {
				apply(j)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	j := load()
	if j.Rollout.Endpoint.Mode != "" || j.Distill.Endpoint.Mode != job.ModeBatch || j.Judge.Endpoint.Mode != job.ModeAuto || j.Judge.Mode != "item" {
		t.Errorf("modes: rollout %q distill %q judge %q (judge.mode %q)", j.Rollout.Endpoint.Mode, j.Distill.Endpoint.Mode, j.Judge.Endpoint.Mode, j.Judge.Mode)
	}
	if b := j.Batch; b.FilesDir != filepath.Join(dir, "offline") || b.PollInterval != 2*time.Minute || b.MaxRequests != 1000 || b.MaxBytes != 1_000_000 {
		t.Errorf("batch settings %+v; files_dir relative to the job file is %s", b, filepath.Join(dir, "offline"))
	}
	if j := load("--batch", "rollout", "--batch-files", "elsewhere"); j.Rollout.Endpoint.Mode != job.ModeBatch || j.Batch.FilesDir != "elsewhere" {
		t.Errorf("flags over the job file: rollout %q, files %q", j.Rollout.Endpoint.Mode, j.Batch.FilesDir)
	}
}

// TestBatchesCancelKeyAndErrors: distill batches cancel sends the API key
// of the variable RUN/job.yaml names (and never prints it), reports a batch
// that finished meanwhile with its final status, names a path that is not
// a run directory (exit 2), and has nothing to do in a run without batches.
func TestBatchesCancelKeyAndErrors(t *testing.T) {
	const secret = "sk-test-0123456789abcdef"
	t.Setenv("RF_TEST_BATCH_KEY", secret)
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/v1/batches/batch_open/cancel":
			fmt.Fprint(w, `{"id":"batch_open","status":"cancelling","request_counts":{"total":10,"completed":4,"failed":1}}`)
		case "/v1/batches/batch_done/cancel":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"message":"cannot cancel a completed batch (key `+secret+`)"}}`)
		case "/v1/batches/batch_done":
			fmt.Fprint(w, `{"id":"batch_done","status":"completed","request_counts":{"total":7,"completed":7,"failed":0}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	run1 := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(pipeline.BatchDir(run1), 0o755)
	os.WriteFile(filepath.Join(run1, "report.json"), []byte(`{"status":"stopped"}`), 0o644)
	os.WriteFile(filepath.Join(run1, "job.yaml"), []byte("input: {paths: [p.jsonl]}\nrollout: {base_url: \""+srv.URL+"/v1\", model: m, api_key_env: RF_TEST_BATCH_KEY}\n"), 0o644)
	var journal bytes.Buffer
	for _, s := range []llm.BatchState{
		{Local: "b000001", Endpoint: srv.URL + "/v1", Phase: llm.PhaseIngested, BatchID: "batch_old", Rows: 3},
		{Local: "b000002", Endpoint: srv.URL + "/v1", Phase: llm.PhaseSubmitted, BatchID: "batch_open", Rows: 10},
		{Local: "b000003", Endpoint: srv.URL + "/v1", Phase: llm.PhaseSubmitted, BatchID: "batch_done", Rows: 7},
	} {
		b, _ := json.Marshal(s)
		journal.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(pipeline.BatchDir(run1), llm.BatchJournal), journal.Bytes(), 0o644)

	var stdout, stderr bytes.Buffer
	if code := run([]string{"batches", "cancel", run1}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, a := range auth {
		if a != "Bearer "+secret {
			t.Errorf("a request went with Authorization %q, not the key of RF_TEST_BATCH_KEY", a)
		}
	}
	if len(auth) != 3 {
		t.Errorf("%d requests; want a cancel of each submitted batch and a read of the finished one", len(auth))
	}
	for _, want := range []string{"b000002  batch_open  cancelling  5 of 10 rows done", "b000003  batch_done  completed  7 of 7 rows done", "cancelled 2 of 2 open batches (12 of 17 rows done)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String()+stderr.String(), secret) || strings.Contains(stdout.String(), "batch_old") {
		t.Errorf("output shows the key or an ingested batch:\n%s%s", stdout.String(), stderr.String())
	}

	empty := filepath.Join(t.TempDir(), "empty")
	os.MkdirAll(empty, 0o755)
	online := filepath.Join(t.TempDir(), "online")
	os.MkdirAll(online, 0o755)
	os.WriteFile(filepath.Join(online, "report.json"), []byte(`{"status":"finished"}`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"batches", "cancel", filepath.Join(empty, "nope")}, exitUsage, filepath.Join(empty, "nope") + " does not exist"},
		{[]string{"batches", "list", empty}, exitUsage, empty + " is not a run directory"},
		{[]string{"batches", "cancel"}, exitUsage, "want one run directory"},
		{[]string{"batches", "frob", online}, exitUsage, `unknown command "frob"`},
		{[]string{"batches", "cancel", online}, exitOK, "nothing to cancel"},
		{[]string{"batches", "list", online}, exitOK, "has no batches"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s%s", tc.args, code, tc.code, tc.want, stdout.String(), stderr.String())
		}
	}
}
