package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "pairs.jsonl")
	data := `{"id":1,"gold":"1/2","pred":"The answer is $0.5$."}` + "\nnot json\n" + `{"id":3,"gold":"7","pred":"8"}` + "\n"
	if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	if code := run([]string{"verify", in}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d, want 0 (bad lines do not fail the run)\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"equal":true`) || !strings.HasPrefix(lines[1], `{"line":2,"error":`) ||
		!strings.Contains(lines[2], `"equal":false`) {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), in+":2: not a JSON object") || !strings.Contains(stderr.String(), "3 lines, 1 equal, 1 bad") {
		t.Errorf("stderr must name the bad line and sum up:\n%s", stderr.String())
	}

	out := filepath.Join(dir, "answers.jsonl")
	stdout.Reset()
	stderr.Reset()
	os.WriteFile(in, []byte(`{"text":"Therefore the probability is 3/8."}`+"\n"), 0o644)
	if code := run([]string{"verify", "--extract", "--out", out, "--quiet", in}, &stdout, &stderr); code != exitOK {
		t.Fatalf("--extract: exit %d\n%s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != `{"answer":"3/8","ok":true,"method":"last_sentence"}`+"\n" || stdout.Len() != 0 {
		t.Errorf("--out file holds %q (%v), stdout %q", got, err, stdout.String())
	}
}

func TestVerifyCommandExitCodes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"verify", "-h"}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "-extract") ||
		!strings.Contains(stderr.String(), "Examples:") {
		t.Errorf("-h: exit %d, usage:\n%s", code, stderr.String())
	}
	for _, args := range [][]string{{"verify", "--no-such-flag"}, {"verify", "a.jsonl", "b.jsonl"}, {"verify", "--max-line-bytes", "0"}} {
		if code := run(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	stderr.Reset()
	run([]string{"verify", "a.jsonl", "b.jsonl"}, &stdout, &stderr)
	if msg, _, _ := strings.Cut(stderr.String(), "Usage"); !strings.Contains(msg, `unexpected argument "b.jsonl"`) {
		t.Errorf("two inputs: the wrong argument is not named before the usage:\n%s", stderr.String())
	}
	if code := run([]string{"verify", filepath.Join(t.TempDir(), "missing.jsonl")}, &stdout, &stderr); code != exitFailed {
		t.Errorf("missing input: exit %d, want %d", code, exitFailed)
	}
	if code := run([]string{"verify", "--out", filepath.Join(t.TempDir(), "no", "such", "dir.jsonl"), "-"}, &stdout, &stderr); code != exitFailed {
		t.Errorf("unwritable output: exit %d, want %d", code, exitFailed)
	}
}
