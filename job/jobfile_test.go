package job

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJobFileErrorsNameTheField: every mistake in a job file is reported at
// once, by its field path and line, in the file's terms (never a Go type),
// together with the invalid values found after decoding.
func TestJobFileErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	os.WriteFile(path, []byte(`input: {paths: [in.jsonl]}
out: run
rollout:
  base_url: http://127.0.0.1:1/v1
  model: m
  temperature: hot
  n: 0
  temprature: 0.5
limits: {attempt_timeout: 5x, concurrency: many}
judge: {enabled: maybe}
prices:
  m: {prompt_per_mtk: 1, completion_per_mtok: 2}
`), 0o644)
	_, err := PrepareJob(path, nil)
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want a usage error", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`rollout.temperature (line 6): "hot" is not a number`,
		`rollout.temprature (line 8): unknown setting; did you mean "temperature"?`,
		`limits.attempt_timeout (line 9): "5x" is not a duration`,
		`limits.concurrency (line 9): "many" is not a whole number`,
		`judge.enabled (line 10): "maybe" is not true or false`,
		`prices.m.prompt_per_mtk (line 12): unknown setting; did you mean "prompt_per_mtok"?`,
		"rollout.n: 0 is outside 1..1024", // a validation error, reported with the type errors
		"job file " + path,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	for _, goType := range []string{"float64", "int", "pipeline.", "bool", "!!str", "time.Duration"} {
		if strings.Contains(msg, goType) {
			t.Errorf("error mentions the Go type %q:\n%s", goType, msg)
		}
	}
}

// TestJobFilePathsAreRelativeToTheFile: paths in a job file do not depend
// on the directory distill is started from.
func TestJobFilePathsAreRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "jobs")
	os.Mkdir(sub, 0o755)
	path := filepath.Join(sub, "job.yaml")
	os.WriteFile(path, []byte("input: {paths: [data/in.jsonl, /abs/in.jsonl]}\nout: ../runs/x\nprompts_dir: prompts\ncache: other/cache.db\n"), 0o644)
	job, err := LoadJobFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Job{Input: Input{Paths: []string{filepath.Join(sub, "data/in.jsonl"), "/abs/in.jsonl"}}, Out: filepath.Join(dir, "runs/x"),
		PromptsDir: filepath.Join(sub, "prompts"), Cache: filepath.Join(sub, "other/cache.db")}
	if strings.Join(job.Input.Paths, ",") != strings.Join(want.Input.Paths, ",") || job.Out != want.Out || job.PromptsDir != want.PromptsDir || job.Cache != want.Cache {
		t.Errorf("paths: %q out %q prompts %q cache %q; want %q %q %q %q", job.Input.Paths, job.Out, job.PromptsDir, job.Cache,
			want.Input.Paths, want.Out, want.PromptsDir, want.Cache)
	}
}

// FuzzLoadJobFile: no job file makes the loader panic, and every problem it
// reports names a place in the file.
func FuzzLoadJobFile(f *testing.F) {
	for _, seed := range []string{
		"rollout: {n: 4}\n", "rollout: [1, 2]\n", "prices: {m: 0}\n", "prices: {m: [1]}\n", "input: {paths: x.jsonl}\n",
		"limits: {attempt_timeout: 3}\n", "a: &x {b: 1}\nc: *x\n", "rollout:\n  temperature: ~\n", "- 1\n- 2\n", ":\n", "",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "job.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadJobFile(path)
		var ue *UsageError
		if err != nil && (!errors.As(err, &ue) || len(ue.Problems) == 0) {
			t.Fatalf("not a usage error with problems: %v", err)
		}
	})
}
