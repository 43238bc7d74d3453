package k8stest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestWorkerStopsOnSIGTERMAsPID1 runs the worker's command line, as the
// manifest gives it, as PID 1 of a new PID namespace (what a container's
// entrypoint is) and sends it SIGTERM from outside, as the kubelet does on
// an eviction. The kernel delivers a signal to a namespace's PID 1 only if
// the process handles it, so a plain `/bin/sh -c` would ignore it and the
// pod would be SIGKILLed after its grace period with its requests in
// flight; the worker must pass it on to distill, which commits what is
// finished and exits 4 (stopped, resumable).
func TestWorkerStopsOnSIGTERMAsPID1(t *testing.T) {
	o := load(t)
	c := container(t, o.jobs["distill-big"].Spec.Template.Spec, "distill")
	if len(c.Command) != 2 || c.Command[1] != "-c" || len(c.Args) != 1 {
		t.Fatalf("the worker's command is %q %q; this test runs a `sh -c SCRIPT` command", c.Command, c.Args)
	}
	dir := t.TempDir()
	bin := testbin.Command(t, "cmd/distill") // PATH gets its directory
	answers, input := writeProblems(t, dir, 2000)
	srv, url, stop, err := sim.Start(sim.Config{Answers: answers, Latency: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	etc := filepath.Join(dir, "etc")
	os.MkdirAll(etc, 0o755)
	job := fmt.Sprintf("input: {paths: [%s]}\nrollout: {base_url: %q, model: simulated, n: 4}\nlimits: {concurrency: 8}\n", input, url)
	os.WriteFile(filepath.Join(etc, "job.yaml"), []byte(job), 0o644)
	runs := filepath.Join(dir, "runs")
	script := strings.NewReplacer("/etc/rubricforge", etc, "/runs", runs).Replace(c.Args[0])

	// unshare --fork makes the shell PID 1 of the new namespace; unshare
	// itself stays outside, as the container runtime does.
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", c.Command[0], "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "JOB_COMPLETION_INDEX=3")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare: %v (this test needs util-linux's unshare and the right to make a PID namespace: root, as in CI)", err)
	}
	defer cmd.Process.Kill()
	pid1 := childOf(t, cmd.Process.Pid)
	deadline := time.Now().Add(time.Minute)
	for srv.Count() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if srv.Count() < 20 {
		t.Fatalf("the worker sent %d requests in a minute\n%s", srv.Count(), out.String())
	}
	if err := syscall.Kill(pid1, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("SIGTERM to the container's PID 1 did not stop the worker in 30 s: it never reached distill, so the kubelet would SIGKILL it with its requests in flight\n%s", out.String())
	}
	if err == nil {
		t.Fatalf("the worker ran to its end (exit 0) after SIGTERM: the signal never reached distill\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("after SIGTERM the worker exited with %v, want 4 (stopped, resumable)\n%s", err, out.String())
	}
	rep, _, _ := pipeline.ReadReport(filepath.Join(runs, "big", "part-3"))
	if rep.Status != pipeline.StatusStopped || rep.StoppedBy != pipeline.StopInterrupt {
		t.Errorf("the worker's report says %s (%s), want stopped by the interrupt\n%s", rep.Status, rep.StoppedBy, out.String())
	}
}

// TestMergeForwardsSIGTERM: the merge Job's shell, PID 1 too, handles
// SIGTERM and passes it on (the same pattern as the worker's), so a merge
// pod that is evicted stops its merge cleanly instead of being killed.
func TestMergeForwardsSIGTERM(t *testing.T) {
	o := load(t)
	c := container(t, o.jobs["distill-big-merge"].Spec.Template.Spec, "merge")
	script := strings.Join(c.Args, "\n")
	if !strings.Contains(script, "trap ") || !strings.Contains(script, "TERM") || !strings.Contains(script, `kill -TERM "$pid"`) {
		t.Errorf("the merge's shell installs no SIGTERM handler that passes it on:\n%s", script)
	}
}

// TestImagesArePinnedByRunScript: every container names the placeholder
// rubricforge:VERSION that run.sh replaces with the pinned $IMAGE, never
// :latest.
func TestImagesArePinnedByRunScript(t *testing.T) {
	o := load(t)
	var pods []string
	check := func(where, image string) {
		pods = append(pods, where)
		if image != "rubricforge:VERSION" {
			t.Errorf("%s: image %q, want the placeholder rubricforge:VERSION that run.sh pins", where, image)
		}
	}
	for name, j := range o.jobs {
		for _, c := range j.Spec.Template.Spec.Containers {
			check("Job "+name, c.Image)
		}
	}
	for name, d := range o.deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			check("Deployment "+name, c.Image)
		}
	}
	if len(pods) < 3 {
		t.Errorf("checked %v; want the workers, the merge and rewardd", pods)
	}
}

func writeProblems(t *testing.T, dir string, n int) (map[string]string, string) {
	t.Helper()
	answers := map[string]string{}
	var lines []string
	for i := range n {
		p := fmt.Sprintf("What is %d plus %d?", i, 2*i)
		answers[p] = fmt.Sprint(3 * i)
		lines = append(lines, fmt.Sprintf(`{"problem":%q,"answer":%q}`, p, answers[p]))
	}
	input := filepath.Join(dir, "problems.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return answers, input
}

// childOf waits for process pid's first child and returns its pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the children of unshare: %v", err)
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			child, _ := strconv.Atoi(f[0])
			return child
		}
	}
	t.Fatal("unshare started no child in 10 s")
	return 0
}
