package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// writeModule writes a module of one command, hello, under dir.
func writeModule(t *testing.T, dir string) {
	t.Helper()
	for name, text := range map[string]string{
		"go.mod":                "module " + module + "\n\ngo 1.26\n",
		"hello/main.go":         "package main\n\nfunc main() { println(\"hello\") }\n",
		"hello/main_test.go":    "package main\n",
		"hello/testdata/x.json": "{}\n",
		"nested/go.mod":         "module other\n",
		"nested/n.go":           "package n\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSourceKey: the key changes with any file a build reads, and not with
// tests, testdata or a nested module.
func TestSourceKey(t *testing.T) {
	dir := t.TempDir()
	writeModule(t, dir)
	key := func() string {
		t.Helper()
		k, err := sourceKey(dir)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key()
	for _, name := range []string{"hello/main_test.go", "hello/testdata/x.json", "nested/n.go"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("// changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if k := key(); k != base {
			t.Errorf("changing %s changed the key", name)
		}
	}
	for _, name := range []string{"hello/main.go", "hello/page.tmpl", "go.sum"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("package main\n// changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		k := key()
		if k == base {
			t.Errorf("changing %s left the key as it was", name)
		}
		base = k
	}
}

// TestSourceKeyIgnoresTestRunFlags: flags in GOFLAGS that only tell go test
// how to run tests (GOFLAGS=-count=1 make test re-runs every test) build the
// same commands, so they keep the key; a flag that changes a build does not.
func TestSourceKeyIgnoresTestRunFlags(t *testing.T) {
	dir := t.TempDir()
	writeModule(t, dir)
	keyWith := func(goflags string) string {
		t.Helper()
		t.Setenv("GOFLAGS", goflags)
		k, err := sourceKey(dir)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := keyWith("-trimpath")
	for _, flags := range []string{"", "-trimpath -count=1", "-count=1 -trimpath -v", "-trimpath -timeout=20m -parallel=4 -shuffle=on -failfast -short -json"} {
		if keyWith(flags) != base {
			t.Errorf("GOFLAGS=%q changed the key", flags)
		}
	}
	for _, flags := range []string{"-trimpath -race", "-trimpath -tags=browser", "-trimpath -ldflags=-w"} {
		if keyWith(flags) == base {
			t.Errorf("GOFLAGS=%q left the key as it was", flags)
		}
	}
}

// TestBuildOnce: callers asking for the same command at once get one build,
// which later callers reuse.
func TestBuildOnce(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	// A go first on PATH that counts its calls, then runs the real one.
	wrap, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + calls + "\nexec " + gobin + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(wrap, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", wrap+string(os.PathListSeparator)+os.Getenv("PATH"))
	root, dir := t.TempDir(), t.TempDir()
	writeModule(t, root)
	path := filepath.Join(dir, "hello")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := buildLocked(dir, root, "hello", path); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := buildLocked(dir, root, "hello", path); err != nil {
		t.Fatal(err)
	}
	again, err := os.Stat(path)
	if err != nil || !os.SameFile(info, again) || !again.ModTime().Equal(info.ModTime()) {
		t.Errorf("the second call built again: %v", err)
	}
	if out, err := exec.Command(path).CombinedOutput(); err != nil || string(out) != "hello\n" {
		t.Errorf("the build runs: %q, %v", out, err)
	}
	if b, err := os.ReadFile(calls); err != nil || strings.Count(string(b), "\n") != 1 {
		t.Errorf("go was called %q (%v); want one build", b, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the build's temporary file is left: %v", err)
	}
}
