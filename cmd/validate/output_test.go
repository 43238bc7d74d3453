package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputsNeverReplaceInputs: an output file that is a run's own file, a
// directory, or an existing sheet is refused (exit 2) and left as it was;
// --force replaces an existing file elsewhere.
func TestOutputsNeverReplaceInputs(t *testing.T) {
	t.Parallel()
	dir := sharedRun(t, 30) // refused outputs leave it as it was: checked below
	manifest := filepath.Join(dir, "manifest.json")
	before, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	sheet := filepath.Join(t.TempDir(), "items.csv")
	if err := os.WriteFile(sheet, []byte("annotated by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{dir, "--html", manifest}, "inside the run directory"},
		{[]string{dir, "--html", t.TempDir()}, "is a directory"},
		{[]string{"sample", dir, "--out", sheet}, "exists; give a new name, or --force"},
	} {
		code, _, stderr := validate(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("validate %v: exit %d, stderr %q; want exit %d saying %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	if after, _ := os.ReadFile(manifest); string(after) != string(before) {
		t.Error("the manifest was replaced")
	}
	if data, _ := os.ReadFile(sheet); string(data) != "annotated by hand\n" {
		t.Error("the annotated sheet was replaced")
	}
	if code, _, stderr := validate(t, nil, "sample", dir, "--out", sheet, "--force"); code != exitOK {
		t.Errorf("sample --force: exit %d %s", code, stderr)
	}
	html := filepath.Join(t.TempDir(), "audit.html")
	if code, _, stderr := validate(t, nil, dir, "--html", html); code != exitOK && code != 3 {
		t.Errorf("--html to a new file: exit %d %s", code, stderr)
	}
}
