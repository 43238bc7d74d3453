// Package testbin builds the module's commands for end-to-end tests once.
// A command is built with plain `go build` into a directory of the
// temporary directory named by a hash of the module's sources, the Go
// version and the build environment, under a file lock: the packages that
// `go test ./...` runs in parallel wait for one build instead of each
// making its own (cold, each build of a command compiles the whole module
// again), and later runs reuse it until a source changes.
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// module is the path of the module whose commands are built.
const module = "github.com/rubricforge/rubricforge"

// Command returns the path of the command in the module's package pkg (for
// example "cmd/distill" or "examples/simllm"), built from the sources as
// they are now. It fails the test when the module's root cannot be found
// or the build fails.
func Command(t testing.TB, pkg string) string {
	t.Helper()
	path, err := command(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	mu    sync.Mutex
	built = map[string]string{} // package -> binary, within this process
)

func command(pkg string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if path, ok := built[pkg]; ok {
		return path, nil
	}
	dir, root, err := buildDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.Base(pkg))
	if err := buildLocked(dir, root, pkg, path); err != nil {
		return "", err
	}
	built[pkg] = path
	return path, nil
}

var (
	keyOnce         sync.Once
	keyDir, keyRoot string
	keyErr          error
)

// buildDir is the directory of this source state's builds (made), and the
// module's root.
func buildDir() (dir, root string, err error) {
	keyOnce.Do(func() {
		keyRoot, keyErr = ModuleRoot()
		if keyErr != nil {
			return
		}
		var key string
		if key, keyErr = sourceKey(keyRoot); keyErr != nil {
			return
		}
		parent := filepath.Join(os.TempDir(), "rubricforge-testbin")
		keyDir = filepath.Join(parent, key)
		if keyErr = os.MkdirAll(keyDir, 0o755); keyErr != nil {
			return
		}
		removeStale(parent, keyDir)
	})
	return keyDir, keyRoot, keyErr
}

// buildLocked builds pkg into path unless a build is there, holding dir's
// lock so that processes do not build the same command at once.
func buildLocked(dir, root, pkg, path string) (err error) {
	lock, err := fsys.OS.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }() // only locked: closing loses nothing
	for {
		held, err := fsys.OS.Lock(lock)
		if err != nil {
			return err
		}
		if !held {
			break
		}
		time.Sleep(20 * time.Millisecond) // another process is building
	}
	defer func() { err = errors.Join(err, fsys.OS.Unlock(lock)) }()
	now := time.Now()
	if err := os.Chtimes(dir, now, now); err != nil { // in use: not stale (removeStale)
		return err
	}
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp := path + ".tmp"
	build := exec.Command("go", "build", buildFlags, "-o", tmp, "./"+pkg)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./%s: %v\n%s", pkg, err, out)
	}
	return os.Rename(tmp, path)
}

// buildFlags: -trimpath makes the packages' build actions independent of
// the directory they are built in, so internal/buildinfo's test, which
// builds distill from a fresh clone with -trimpath too, takes them from
// the build cache (only its main package and link are its own) instead of
// compiling the whole module a second time.
const buildFlags = "-trimpath"

// ModuleRoot is the directory of the module's go.mod, above the working
// directory (a package's, under go test). Tests find the module's files
// from it, not from runtime.Caller, whose paths -trimpath (make test)
// makes relative to the module.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module "+module+"\n") {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("testbin: no go.mod of %s above the working directory", module)
		}
		dir = up
	}
}

// buildEnv is the environment variable v as it changes a build: GOFLAGS
// without -trimpath, which every build here has (the Makefile sets it for
// the main module's tests, not for the nested modules', whose tests then
// share the same binaries), and without the flags that only tell go test
// how to run tests (GOFLAGS=-count=1 make test builds the same commands).
func buildEnv(v string) string {
	if v != "GOFLAGS" {
		return os.Getenv(v)
	}
	var kept []string
	for _, f := range strings.Fields(os.Getenv(v)) {
		if f != buildFlags && f != buildFlags+"=true" && !testRunFlag(f) {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}

// testRunFlags are go test's flags that change how tests run, not what is
// built.
var testRunFlags = []string{"count", "run", "skip", "v", "json", "timeout", "parallel", "shuffle", "failfast", "short", "fullpath", "cpu"}

// testRunFlag reports whether the GOFLAGS entry f (-name or -name=value,
// with one dash or two) is one of testRunFlags.
func testRunFlag(f string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
	return strings.HasPrefix(f, "-") && slices.Contains(testRunFlags, name)
}

// sourceKey hashes what a build's output depends on: the Go version, the
// environment that changes a build, and every file of the module a command
// can be built from (all but tests, testdata, hidden directories and
// nested modules), names and contents.
func sourceKey(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH, buildFlags)
	for _, v := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOARM64", "CC"} {
		fmt.Fprintf(h, "%s=%s\n", v, buildEnv(v))
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d.Name())
		}
		if d.Type().IsRegular() && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, path := range files {
		if err := hashFile(h, root, path); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

func skipDir(root, path, name string) error {
	if path == root {
		return nil
	}
	if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

func hashFile(h io.Writer, root, path string) error {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	fmt.Fprintf(h, "\x00%s\x00", filepath.ToSlash(rel))
	_, err = io.Copy(h, f)
	return err
}

// removeStale removes the builds of other source states not used for a
// day (a build directory's time is that of its last use).
func removeStale(parent, keep string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(parent, e.Name())
		if info, err := e.Info(); err == nil && path != keep && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(path) // best effort: another process may be removing it too
		}
	}
}
