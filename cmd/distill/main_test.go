package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/job"
)

func writeProblems(t *testing.T, path string, n int) map[string]string {
	t.Helper()
	answers, err := problemsFile(path, n)
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// problemsFile writes n problems "What is i plus 2i+1?" into path and
// returns their answers.
func problemsFile(path string, n int) (map[string]string, error) {
	answers := map[string]string{}
	var b bytes.Buffer
	for i := range n {
		p := fmt.Sprintf("What is %d plus %d?", i, 2*i+1)
		answers[p] = fmt.Sprint(3*i + 1)
		line, _ := json.Marshal(map[string]string{"problem": p, "answer": answers[p]})
		b.Write(line)
		b.WriteByte('\n')
	}
	return answers, os.WriteFile(path, b.Bytes(), 0o644)
}

func TestRunCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 12)
	_, url, stop, err := sim.Start(sim.Config{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	out := filepath.Join(dir, "run")
	jb := filepath.Join(dir, "job.yaml")
	// The job file names a wrong endpoint and n; the flags override both.
	os.WriteFile(jb, []byte("input: {paths: ["+input+"]}\nrollout: {base_url: http://127.0.0.1:1/v1, model: simulated, n: 2}\n"), 0o644)

	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--config", jb, "--base-url", url, "--n", "4", "--out", out, "--quiet"}, &stdout, &stderr)
	if code != exitOK && code != exitProblems {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "run directory: "+out) || !strings.Contains(stdout.String(), "problems: 12 unique") {
		t.Errorf("summary missing:\n%s", stdout.String())
	}
	written, err := job.LoadJobFile(filepath.Join(out, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if written.Rollout.N != 4 || written.Rollout.BaseURL != url || written.Judge.BaseURL != url {
		t.Errorf("job.yaml does not hold the flag values: n=%d base_url=%s judge base_url=%s", written.Rollout.N, written.Rollout.BaseURL, written.Judge.BaseURL)
	}

	stdout.Reset()
	if code := run([]string{"status", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "finished") || !strings.Contains(stdout.String(), "corpus:") {
		t.Errorf("status output:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"status", "--json", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status --json exit %d", code)
	}
	var st map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
		t.Errorf("status --json is not JSON: %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "Usage"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{[]string{"run", "--no-such-flag"}, exitUsage, "no-such-flag"},
		{[]string{"run"}, exitUsage, "input.paths"},
		{[]string{"run", "--input", "x.jsonl", "--out", dir, "--base-url", "ftp://x", "--model", "m"}, exitUsage, "rollout.base_url"},
		{[]string{"run", "--config", filepath.Join(dir, "missing.yaml")}, exitUsage, "missing.yaml"},
		{[]string{"run", "extra"}, exitUsage, "unexpected argument"},
		{[]string{"status"}, exitUsage, "Usage"},
		{[]string{"status", filepath.Join(dir, "nothing")}, exitUsage, "nothing"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %s)", tc.args, code, tc.code, stderr.String())
		}
		if !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: output does not mention %q:\n%s%s", tc.args, tc.want, stdout.String(), stderr.String())
		}
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "-h"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("run -h exit %d", code)
	}
	help := stderr.String()
	for _, want := range []string{"Examples:", "--config", "-base-url", "-api-key-env", "-judge-model", "-retry-failed", "-force", "-max-cost-usd", "Exit codes"} {
		if !strings.Contains(help, want) {
			t.Errorf("run -h does not mention %q", want)
		}
	}
}

func TestUnknownJobKeyIsAnError(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	os.WriteFile(job, []byte("rollout: {n: 4, temprature: 0.5}\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--config", job}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), "temprature") {
		t.Errorf("error does not name the unknown key: %s", stderr.String())
	}
}

// startRun serves a simulated endpoint for problems written to dir.
func startRun(t *testing.T, n int) (input, url string) {
	t.Helper()
	input = filepath.Join(t.TempDir(), "p.jsonl")
	answers := writeProblems(t, input, n)
	_, url, stop, err := sim.Start(sim.Config{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return input, url
}

// TestBadFlagPointsAtHelp: a bad flag prints the error and one line that
// points at -h, not the whole usage.
func TestBadFlagPointsAtHelp(t *testing.T) {
	for _, args := range [][]string{{"run", "--no-such-flag"}, {"run", "--n", "many"}, {"status", "--frob", "x"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[1], "-h") || strings.Contains(stderr.String(), "Examples") {
			t.Errorf("%v: want the error and one line pointing at -h, got:\n%s", args, stderr.String())
		}
	}
}

// TestCostWithoutPriceIsAUsageError: a cost budget for a model without a
// price is refused before anything is sent, naming the model and the prices
// key; --free-models declares a model free.
func TestCostWithoutPriceIsAUsageError(t *testing.T) {
	input, url := startRun(t, 4)
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "2", "--quiet", "--max-cost-usd", "0.01"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), `model "simulated"`) || !strings.Contains(stderr.String(), "prices") {
		t.Errorf("the refusal does not name the model and the prices key:\n%s", stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused job created its run directory")
	}
	stderr.Reset()
	if code := run(append(args, "--free-models", "simulated"), &stdout, &stderr); code != exitOK && code != exitProblems {
		t.Errorf("with --free-models: exit %d\n%s", code, stderr.String())
	}
}

// TestBudgetStopSaysToRaiseTheBudget: the budget counts every session, so
// the hint after a budget stop is to raise it, not to run the same command.
func TestBudgetStopSaysToRaiseTheBudget(t *testing.T) {
	input, url := startRun(t, 30)
	args := []string{"run", "--input", input, "--out", filepath.Join(t.TempDir(), "run"), "--base-url", url, "--model", "simulated",
		"--n", "2", "--concurrency", "2", "--problems-in-flight", "2", "--quiet", "--max-total-tokens", "3000"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitStopped {
		t.Fatalf("exit %d, want %d\n%s", code, exitStopped, stderr.String())
	}
	if !strings.Contains(stderr.String(), "raise --max-cost-usd or --max-total-tokens") || strings.Contains(stderr.String(), "run the same command again") {
		t.Errorf("budget stop hint:\n%s", stderr.String())
	}
}

func TestMissingInputIsAUsageError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"run", "--input", filepath.Join(t.TempDir(), "nope.jsonl"), "--out", filepath.Join(t.TempDir(), "run"), "--base-url", "http://127.0.0.1:1/v1", "--model", "m"}
	if code := run(args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "nope.jsonl does not exist") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestStatusFlagsAfterTheDirectory: `distill status RUN --json` works.
func TestStatusFlagsAfterTheDirectory(t *testing.T) {
	input, url := startRun(t, 3)
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "2", "--quiet"}, &stdout, &stderr); code != exitOK && code != exitProblems {
		t.Fatalf("run: exit %d\n%s", code, stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"status", out, "--json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status RUN --json: exit %d\n%s", code, stderr.String())
	}
	var st map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
		t.Errorf("status RUN --json is not JSON: %v\n%s", err, stdout.String())
	}
}

// TestNoStoppingMessageAfterANormalFinish: the signal watcher is joined
// before runCmd returns, and a normal finish prints nothing about stopping.
func TestNoStoppingMessageAfterANormalFinish(t *testing.T) {
	input, url := startRun(t, 3)
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--input", input, "--out", filepath.Join(t.TempDir(), "run"), "--base-url", url, "--model", "simulated", "--n", "2"}, &stdout, &stderr)
	if code != exitOK && code != exitProblems {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "stopping") {
		t.Errorf("a normal finish printed a stopping message:\n%s", stderr.String())
	}
}

// TestWatchSignals: stop without a signal prints nothing and returns only
// once the watcher is gone; a signal cancels the context, says so once,
// runs afterFirst, and later signals are taken without a word (a
// scheduler's SIGTERM comes twice), until stop releases them.
func TestWatchSignals(t *testing.T) {
	var out bytes.Buffer
	sigs := make(chan os.Signal, 1)
	first, released := 0, 0
	ctx, stop := watchSignals(context.Background(), sigs, func() { first++ }, func() { released++ }, &out, false)
	stop()
	if out.Len() != 0 || ctx.Err() == nil || released == 0 || first != 0 {
		t.Errorf("stop without a signal: output %q, ctx %v, released %d, afterFirst %d", out.String(), ctx.Err(), released, first)
	}

	out.Reset()
	first, released = 0, 0
	sigs = make(chan os.Signal)
	ctx, stop = watchSignals(context.Background(), sigs, func() { first++ }, func() { released++ }, &out, false)
	sigs <- syscall.SIGTERM
	<-ctx.Done()
	sigs <- syscall.SIGTERM // taken, not left to kill the process
	sigs <- syscall.SIGTERM
	if released != 0 {
		t.Errorf("signals released before stop")
	}
	stop()
	if got := strings.Count(out.String(), "stopping"); got != 1 || released != 1 || first != 1 {
		t.Errorf("after three signals: %d stopping messages, afterFirst %d, released %d:\n%s", got, first, released, out.String())
	}
}

// TestVersionIsSetOnMain: the version comes from package main (-ldflags -X main.version).
func TestVersionIsSetOnMain(t *testing.T) {
	old := version
	version = "v9.9.9-test"
	defer func() { version = old }()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "distill v9.9.9-test") || toolVersion() != "v9.9.9-test" {
		t.Errorf("version: exit %d, %q", code, stdout.String())
	}
}

// TestSpec2CorpusReadByStatusAndExport: a run directory written at record
// spec 2 (corpus/testdata/spec2-run, made by the tool before the grounded
// column) is shown by status and exported, though this version writes
// spec 3; resuming it is refused with a message that says how to go on.
func TestSpec2CorpusReadByStatusAndExport(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "corpus", "testdata", "spec2-run"))); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"status", dir}, &out, &errb); code != 0 || !strings.Contains(out.String(), "(spec 2,") {
		t.Errorf("status: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	exp := filepath.Join(t.TempDir(), "export")
	if code := run([]string{"export", "--format", "verl", "--out", exp, dir}, &out, &errb); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, errb.String())
	}
	files, _ := filepath.Glob(filepath.Join(exp, "data", "*.parquet"))
	if len(files) == 0 {
		t.Errorf("export wrote no data files")
	}
	errb.Reset()
	input := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(input, []byte(`{"problem": "What is 1+1?", "answer": "2"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := run([]string{"run", "--input", input, "--out", dir, "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--quiet"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "written with record spec 2") {
		t.Errorf("resuming a spec-2 run: exit %d\n%s", code, errb.String())
	}
}
