package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// TestOutputsNeverReplaceInputs: distill verify --out its own input, and
// distill export --out the run directory or a directory inside it, are
// refused (exit 2) and change nothing.
func TestOutputsNeverReplaceInputs(t *testing.T) {
	tmp := t.TempDir()
	pairs := filepath.Join(tmp, "pairs.jsonl")
	const line = `{"gold": "1/2", "pred": "0.5"}` + "\n"
	if err := os.WriteFile(pairs, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run2(t, []string{"verify", "--out", pairs, pairs}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "is an input") {
		t.Errorf("verify --out its input: exit %d, %s", code, errOut.String())
	}
	if data, _ := os.ReadFile(pairs); string(data) != line {
		t.Errorf("the input was changed: %q", data)
	}
	verdicts := filepath.Join(tmp, "verdicts.jsonl")
	os.WriteFile(verdicts, []byte("keep\n"), 0o644)
	if code := run2(t, []string{"verify", "--out", verdicts, pairs}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "--force") {
		t.Errorf("verify --out an existing file: exit %d, %s", code, errOut.String())
	}
	if code := run2(t, []string{"verify", "--force", "--out", verdicts, pairs}, &out, &errOut); code != exitOK {
		t.Errorf("verify --force: exit %d, %s", code, errOut.String())
	}
	if data, _ := os.ReadFile(verdicts); !strings.Contains(string(data), `"equal":true`) {
		t.Errorf("verdicts: %q", data)
	}

	dir := smallRun(t, 4, 10)
	before, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	for _, o := range []string{dir, filepath.Join(dir, "exp"), filepath.Join(dir, "shards")} {
		code := run2(t, []string{"export", dir, "--format", "jsonl", "--out", o, "--force"}, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), "run directory") {
			t.Errorf("export --out %s: exit %d, %s", o, code, errOut.String())
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "manifest.json")); !bytes.Equal(before, after) {
		t.Error("the run's manifest changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("export wrote data/ into the run directory")
	}
}

// TestStoppedExportExits4: Ctrl-C during an export exits 4 and says the
// earlier export is unchanged, which it is.
func TestStoppedExportExits4(t *testing.T) {
	t.Parallel()
	dir := smallRun(t, 6, 3)
	out := filepath.Join(t.TempDir(), "exp")
	var stdout, stderr bytes.Buffer
	if code := run2(t, []string{"export", dir, "--format", "jsonl", "--out", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("export: exit %d %s", code, stderr.String())
	}
	before, _ := os.ReadFile(filepath.Join(out, "export.json"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stderr.Reset()
	opt := corpus.ExportOptions{Format: "rar", Out: out, Logger: slog.New(slog.DiscardHandler)}
	if code := exportRun(ctx, dir, opt, &stdout, &stderr); code != exitStopped || !strings.Contains(stderr.String(), "stopped; the earlier export in "+out+" is unchanged") {
		t.Errorf("stopped export: exit %d, %q", code, stderr.String())
	}
	if after, _ := os.ReadFile(filepath.Join(out, "export.json")); !bytes.Equal(before, after) {
		t.Error("the earlier export changed")
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	stderr.Reset()
	opt.Out = fresh
	if code := exportRun(ctx, dir, opt, &stdout, &stderr); code != exitStopped || !strings.Contains(stderr.String(), "nothing was written") {
		t.Errorf("stopped fresh export: exit %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a stopped export left %s: %v", fresh, err)
	}
}

// TestProfileNeverReplacesTheInput: distill run --cpuprofile naming the
// input is refused before the run starts, and the input is left as it was.
func TestProfileNeverReplacesTheInput(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.jsonl")
	const line = `{"problem": "1+1?", "answer": "2"}` + "\n"
	if err := os.WriteFile(input, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run2(t, []string{"run", "--input", input, "--out", filepath.Join(dir, "run"), "--base-url", "http://127.0.0.1:1/v1",
		"--model", "m", "--free-models", "m", "--quiet", "--cpuprofile", input}, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "is an input") {
		t.Errorf("--cpuprofile the input: exit %d, %s", code, errOut.String())
	}
	if data, _ := os.ReadFile(input); string(data) != line {
		t.Errorf("the input was replaced: %q", data)
	}
}
