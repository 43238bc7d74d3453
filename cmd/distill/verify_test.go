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

// A row whose gold answer is empty cannot be graded: it is a bad line,
// never a comparison counted as not equal.
func TestVerifyEmptyGoldIsABadLine(t *testing.T) {
	for _, gold := range []string{`""`, `"   "`} {
		in := filepath.Join(t.TempDir(), "pairs.jsonl")
		data := `{"id":1,"gold":` + gold + `,"pred":"The answer is 5."}` + "\n" + `{"id":2,"gold":"5","pred":"5"}` + "\n"
		if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{"verify", in}, &stdout, &stderr); code != exitOK {
			t.Fatalf("gold %s: exit %d\n%s", gold, code, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"line":1,"error":`) || !strings.Contains(lines[0], `gold`) {
			t.Errorf("gold %s: the first line must be a bad line naming the field:\n%s", gold, stdout.String())
		}
		if !strings.Contains(stderr.String(), "2 lines, 1 equal, 1 bad") {
			t.Errorf("gold %s: summary must count the empty gold as bad:\n%s", gold, stderr.String())
		}
	}
}

// A file whose rows all use other field names stops after its first lines
// with a usage error that names the fields it found, as distill run does,
// instead of one stderr line per row and exit 0.
func TestVerifyOtherFieldNamesIsAUsageError(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		line    string
		want    []string
		wantOut bool
	}{
		{"compare", nil, `{"question":"q","answer":"5","response":"The answer is 5."}`, []string{`"answer"`, `"question"`, `"response"`, `"gold"`, `"pred"`}, false},
		{"extract", []string{"--extract"}, `{"solution":"The answer is 5."}`, []string{`"solution"`, `"text"`}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "rows.jsonl")
			if err := os.WriteFile(in, []byte(strings.Repeat(tc.line+"\n", 5000)), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run(append(append([]string{"verify"}, tc.args...), in), &stdout, &stderr)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d", code, exitUsage)
			}
			if n := strings.Count(stderr.String(), "\n"); n > 5 {
				t.Errorf("stderr has %d lines; want one message", n)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not name %s:\n%s", w, stderr.String())
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("nothing must be written when the input is refused; stdout has %d bytes", stdout.Len())
			}
		})
	}
	// One usable line among the first ones is enough: the others are bad lines.
	in := filepath.Join(t.TempDir(), "mixed.jsonl")
	os.WriteFile(in, []byte(`{"answer":"5"}`+"\n"+`{"gold":"5","pred":"5"}`+"\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"verify", in}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "2 lines, 1 equal, 1 bad") {
		t.Errorf("mixed: exit %d\n%s", code, stderr.String())
	}
}
