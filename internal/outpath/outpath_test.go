package outpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFile(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "runs", "math")
	write(t, filepath.Join(run, "manifest.json"), "{}")
	write(t, filepath.Join(run, "shards", "part-00000.parquet"), "x")
	export := filepath.Join(root, "exports", "verl")
	write(t, filepath.Join(export, "export.json"), "{}")
	pairs := write(t, filepath.Join(root, "pairs.jsonl"), "{}\n")
	sheet := write(t, filepath.Join(root, "items.csv"), "annotated\n")
	link := filepath.Join(root, "link.jsonl")
	if err := os.Symlink(pairs, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		path   string
		force  bool
		inputs []string
		want   string // "" = allowed
	}{
		{"the run's manifest", filepath.Join(run, "manifest.json"), true, []string{run}, "inside the run directory"},
		{"a new file in a run directory", filepath.Join(run, "audit.html"), false, nil, "inside the run directory"},
		{"a file in a shard directory", filepath.Join(run, "shards", "x.html"), true, nil, "inside the run directory"},
		{"a file in an export", filepath.Join(export, "data", "x.csv"), true, nil, "inside the export"},
		{"the input itself", pairs, true, []string{pairs}, "is an input"},
		{"the input by another name", link, true, []string{pairs}, "is an input"},
		{"an existing sheet", sheet, false, nil, "exists; give a new name, or --force"},
		{"an existing sheet, forced", sheet, true, nil, ""},
		{"a directory", root, true, nil, "is a directory"},
		{"a new file", filepath.Join(root, "new.html"), false, []string{pairs}, ""},
		{"stdout", "-", false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := File("--out", tc.path, tc.force, tc.inputs...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--out") {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	if data, _ := os.ReadFile(sheet); string(data) != "annotated\n" {
		t.Error("a check wrote to the sheet")
	}
}

func TestDir(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	write(t, filepath.Join(run, "manifest.json"), "{}")
	write(t, filepath.Join(run, "shards", "part-00000.parquet"), "x")
	earlier := filepath.Join(root, "exp")
	write(t, filepath.Join(earlier, "export.json"), "{}")
	for _, tc := range []struct {
		name, path, want string
	}{
		{"the run directory", run, "is a run directory"},
		{"inside the run directory", filepath.Join(run, "export"), "inside the run directory"},
		{"inside an export", filepath.Join(earlier, "data", "again"), "inside the export"},
		{"an earlier export, replaced", earlier, ""},
		{"a new directory", filepath.Join(root, "new"), ""},
		{"a file", filepath.Join(run, "manifest.json"), "is a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Dir("--out", tc.path, run)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
