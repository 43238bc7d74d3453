package k8stest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeKubectl writes a kubectl that records every call and the manifests
// piped to apply, and answers `get job NAME` with the conditions in
// DIR/NAME.conditions (empty: still running) and `.status.failedIndexes`
// with DIR/NAME.failed; NotFound when DIR/NAME.gone exists, and a refused
// connection when DIR/NAME.down does.
func fakeKubectl(t *testing.T, dir string) string {
	t.Helper()
	script := `#!/bin/bash
dir=` + dir + `
echo "$*" >> "$dir/calls"
args=" $* "
case $args in
*" get job "*) if [ -f "$dir/$3.gone" ]; then echo "Error from server (NotFound): jobs.batch \"$3\" not found" >&2; exit 1; fi ;;&
*" get job "*) if [ -f "$dir/$3.down" ]; then echo "The connection to the server localhost:8080 was refused" >&2; exit 1; fi ;;&
*" apply -f - "*) cat >> "$dir/applied" ;;
*failedIndexes*) cat "$dir/$3.failed" 2>/dev/null ;;
*" get job "*) cat "$dir/$3.conditions" 2>/dev/null ;;
esac
`
	path := filepath.Join(dir, "kubectl")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func runFlow(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	// A flow that waits for ever is a failure, not a hung test: it is
	// killed with its subshells.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{"../run.sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Env = append(append(os.Environ(), "KUBECTL="+fakeKubectl(t, dir), "POLL=0"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRunScriptMergesOnlyAfterTheWorkersComplete: the workers' Job
// completed, so the merge is applied, every manifest with the pinned image.
func TestRunScriptMergesOnlyAfterTheWorkersComplete(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "distill-big.conditions"), []byte("SuccessCriteriaMet Complete "), 0o644)
	os.WriteFile(filepath.Join(dir, "distill-big-merge.conditions"), []byte("Complete "), 0o644)
	const image = "registry.example.com/team/rubricforge:v1.2.0"
	out, err := runFlow(t, dir, []string{"IMAGE=" + image})
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	applied, _ := os.ReadFile(filepath.Join(dir, "applied"))
	for _, want := range []string{"kind: PersistentVolumeClaim", "kind: ConfigMap", "name: distill-big\n", "name: distill-big-merge"} {
		if !strings.Contains(string(applied), want) {
			t.Errorf("run.sh did not apply %q", want)
		}
	}
	if strings.Contains(string(applied), "image: rubricforge:VERSION") || strings.Count(string(applied), "image: "+image) != 2 {
		t.Errorf("the applied manifests do not all run %s:\n%s", image, applied)
	}
	if !strings.Contains(out, "merged into /runs/big/all") {
		t.Errorf("run.sh says:\n%s", out)
	}
}

// TestRunScriptStopsWhenAWorkerFails: an index that ran out of retries
// fails the Job; the merge is not applied, and the message names the
// failed indexes and how to run them again.
func TestRunScriptStopsWhenAWorkerFails(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "distill-big.conditions"), []byte("FailureTarget Failed "), 0o644)
	os.WriteFile(filepath.Join(dir, "distill-big.failed"), []byte("3,7"), 0o644)
	out, err := runFlow(t, dir, []string{"IMAGE=registry.example.com/rubricforge@sha256:" + strings.Repeat("ab", 32)})
	if err == nil {
		t.Fatalf("run.sh exited 0 with a failed worker\n%s", out)
	}
	applied, _ := os.ReadFile(filepath.Join(dir, "applied"))
	if strings.Contains(string(applied), "distill-big-merge") {
		t.Error("the merge was applied after a worker failed")
	}
	for _, want := range []string{"indexes 3,7", "kubectl delete job distill-big", "resumes"} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure message lacks %q:\n%s", want, out)
		}
	}
}

// TestRunScriptRefusesAnUnpinnedImage: no IMAGE, :latest, or neither tag
// nor digest is a usage error before anything is applied.
func TestRunScriptRefusesAnUnpinnedImage(t *testing.T) {
	for _, c := range []struct{ image, want string }{
		{"", "set IMAGE"},
		{"registry.example.com/rubricforge:latest", "refusing :latest"},
		{"registry.example.com:5000/rubricforge", "no tag or digest"},
	} {
		dir := t.TempDir()
		out, err := runFlow(t, dir, []string{"IMAGE=" + c.image})
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(out, c.want) {
			t.Errorf("IMAGE=%q: %v, %q; want exit 2 saying %q", c.image, err, out, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "calls")); err == nil {
			t.Errorf("IMAGE=%q: kubectl was called", c.image)
		}
	}
}

// TestRunScriptStopsWhenTheJobIsGone: a workers' Job deleted while run.sh
// waits for it (by hand, or by a TTL) ends the wait with exit 1 and says
// so, applying no merge; an API server that stays unreachable ends it
// after RETRIES looks.
func TestRunScriptStopsWhenTheJobIsGone(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"distill-big.gone", "the workers' Job distill-big is gone"},
		{"distill-big.down", "could not read the Job distill-big 3 times in a row"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, c.file), nil, 0o644)
		out, err := runFlow(t, dir, []string{"IMAGE=registry.example.com/team/rubricforge:v1.2.0", "RETRIES=3"})
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out, c.want) {
			t.Errorf("%s: %v; want exit 1 saying %q:\n%s", c.file, err, c.want, out)
		}
		applied, _ := os.ReadFile(filepath.Join(dir, "applied"))
		if strings.Contains(string(applied), "distill-big-merge") {
			t.Errorf("%s: the merge was applied", c.file)
		}
	}
}
