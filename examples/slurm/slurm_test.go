// Package slurm holds the tests of the Slurm scripts of examples/slurm: a
// syntax check by bash -n, and each script run as Slurm would run it
// against the simulated endpoint.
package slurm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/pipeline"
)

var scripts = []string{"distill-array.sbatch", "distill-merge.sbatch", "submit.sh"}

func TestScriptsParse(t *testing.T) {
	for _, s := range scripts {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}

// runScript runs a script with bash, as sbatch does, with env added to the
// test's environment.
func runScript(t *testing.T, script string, env ...string) (string, error) {
	t.Helper()
	return runScriptArgs(t, script, nil, env...)
}

// runScriptArgs is runScript with arguments to the script.
func runScriptArgs(t *testing.T, script string, args []string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestArrayAndMerge runs each array task of the worker script with the
// variables Slurm sets, against the simulated endpoint, then the merge
// script: the merged corpus accounts for every problem of the input.
func TestArrayAndMerge(t *testing.T) {
	dir := t.TempDir()
	bin := testbin.Command(t, "cmd/distill")
	answers := map[string]string{}
	var lines []string
	for i := range 40 {
		p := fmt.Sprintf("What is %d squared plus %d?", i, i+1)
		answers[p] = fmt.Sprint(i*i + i + 1)
		lines = append(lines, fmt.Sprintf(`{"problem":%q,"answer":%q}`, p, answers[p]))
	}
	input := filepath.Join(dir, "problems.jsonl")
	os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	_, url, stop, err := sim.Start(sim.Config{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	jobFile := filepath.Join(dir, "job.yaml")
	os.WriteFile(jobFile, []byte(fmt.Sprintf("input: {paths: [%s]}\nrollout: {base_url: %q, model: simulated, n: 4}\noutput: {shard_rows: 5}\n", input, url)), 0o644)
	runs := filepath.Join(dir, "runs", "big")
	common := []string{"JOB_FILE=" + jobFile, "RUNS=" + runs, "DISTILL=" + bin}

	if out, err := runScript(t, "distill-merge.sbatch", common...); err == nil || !strings.Contains(out, "no worker run directories") {
		t.Errorf("the merge before any worker: %v\n%s", err, out)
	}
	const k = 4
	for task := range k {
		env := append([]string{fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", task), fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%d", k), "SLURM_ARRAY_JOB_ID=77"}, common...)
		if out, err := runScript(t, "distill-array.sbatch", env...); err != nil {
			t.Fatalf("array task %d: %v\n%s", task, err, out)
		}
		if task == 1 { // the merge refuses while partitions are missing
			if out, err := runScript(t, "distill-merge.sbatch", common...); err == nil || !strings.Contains(out, "missing partitions: 2/4, 3/4") {
				t.Errorf("the merge with 2 of 4 workers: %v\n%s", err, out)
			}
		}
	}
	if out, err := runScript(t, "distill-merge.sbatch", common...); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	rep, ok, err := pipeline.ReadReport(filepath.Join(runs, "all"))
	if err != nil || !ok {
		t.Fatalf("the merged report: %v", err)
	}
	p := rep.Problems
	if rep.Status != pipeline.StatusFinished || p.Unique != 40 || p.Done+p.Failed+p.LeftOut != 40 || rep.CorpusRows != p.Done || p.Done == 0 {
		t.Errorf("merged: %s, problems %+v, %d records", rep.Status, p, rep.CorpusRows)
	}
	for task := range k {
		w, _, _ := pipeline.ReadReport(filepath.Join(runs, fmt.Sprintf("part-%d", task)))
		if w.Partition == nil || w.Partition.Partition != fmt.Sprintf("%d/%d", task, k) {
			t.Errorf("task %d ran partition %+v", task, w.Partition)
		}
	}

	// Outside an array job the worker script says what is missing.
	if out, err := runScript(t, "distill-array.sbatch", common...); err == nil || !strings.Contains(out, "not an array task") {
		t.Errorf("the worker script outside an array: %v\n%s", err, out)
	}
}

// fakeSlurm writes an sbatch that records its calls and answers job ids
// 4001, 4002, ... (as JOBID;CLUSTER), and an scancel that records its own.
func fakeSlurm(t *testing.T, dir string) (path, calls string) {
	t.Helper()
	calls = filepath.Join(dir, "calls")
	sbatch := `#!/bin/bash
n=$(( $(cat "` + calls + `.n" 2>/dev/null || echo 0) + 1 ))
echo $n > "` + calls + `.n"
printf 'sbatch %s\n' "$*" >> "` + calls + `"
echo "$((4000 + n));cluster1"
`
	os.WriteFile(filepath.Join(dir, "sbatch"), []byte(sbatch), 0o755)
	os.WriteFile(filepath.Join(dir, "scancel"), []byte("#!/bin/bash\nprintf 'scancel %s\\n' \"$*\" >> \""+calls+"\"\n"), 0o755)
	// squeue prints the lines of dir/queue ("ARRAY_JOB TASK STATE"), as
	// squeue --noheader --array --format='%F %K %T' does.
	os.WriteFile(filepath.Join(dir, "squeue"), []byte("#!/bin/bash\ncat \""+filepath.Join(dir, "queue")+"\" 2>/dev/null\nexit 0\n"), 0o755)
	return "PATH=" + dir + ":" + os.Getenv("PATH"), calls
}

func readCalls(t *testing.T, calls string) []string {
	t.Helper()
	b, _ := os.ReadFile(calls)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestSubmit runs submit.sh with an sbatch that records its calls: the
// workers go as an array of PARTITIONS tasks, the merge after all of them.
func TestSubmit(t *testing.T) {
	dir := t.TempDir()
	path, calls := fakeSlurm(t, dir)
	out, err := runScript(t, "submit.sh", path, "PARTITIONS=16", "JOB_FILE=j.yaml", "RUNS="+filepath.Join(dir, "r"))
	if err != nil {
		t.Fatalf("submit.sh: %v\n%s", err, out)
	}
	got := readCalls(t, calls)
	if len(got) != 2 || !strings.Contains(got[0], "--array=0-15") || !strings.HasSuffix(got[0], "distill-array.sbatch") ||
		!strings.Contains(got[1], "--dependency=afterok:4001 ") || !strings.HasSuffix(got[1], "distill-merge.sbatch") {
		t.Errorf("sbatch calls:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(out, "array job 4001 (16 tasks); merge: job 4002") {
		t.Errorf("submit.sh says %q", out)
	}
	if out, err := runScript(t, "submit.sh", path, "PARTITIONS=0"); err == nil || !strings.Contains(out, "not a positive number") {
		t.Errorf("PARTITIONS=0: %v %s", err, out)
	}
}

// TestSubmitResume: a task that failed leaves the merge's afterok unmet
// for ever. --resume cancels that merge, submits again only the tasks
// whose worker has not finished, and queues a new merge after them;
// --merge queues the merge alone.
func TestSubmitResume(t *testing.T) {
	dir := t.TempDir()
	path, calls := fakeSlurm(t, dir)
	runs := filepath.Join(dir, "runs")
	env := []string{path, "PARTITIONS=4", "JOB_FILE=j.yaml", "RUNS=" + runs}
	if out, err := runScript(t, "submit.sh", env...); err != nil {
		t.Fatalf("submit.sh: %v\n%s", err, out)
	}
	// Workers 0 and 2 finished; 1 failed (exit 1), 3 stopped.
	for i, status := range []string{"finished", "failed", "finished", "stopped"} {
		os.MkdirAll(filepath.Join(runs, fmt.Sprintf("part-%d", i)), 0o755)
		os.WriteFile(filepath.Join(runs, fmt.Sprintf("part-%d", i), "report.json"), []byte(`{
  "status": "`+status+`"
}`), 0o644)
	}
	out, err := runScriptArgs(t, "submit.sh", []string{"--resume"}, env...)
	if err != nil {
		t.Fatalf("submit.sh --resume: %v\n%s", err, out)
	}
	got := readCalls(t, calls)[2:]
	if len(got) != 3 || got[0] != "scancel 4002" || !strings.Contains(got[1], "--array=1,3 ") ||
		!strings.HasSuffix(got[1], "distill-array.sbatch") || !strings.Contains(got[2], "--dependency=afterok:4003 ") {
		t.Errorf("--resume's calls:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(out, "tasks 1,3 of 4") {
		t.Errorf("--resume says %q", out)
	}

	out, err = runScriptArgs(t, "submit.sh", []string{"--merge"}, env...)
	got = readCalls(t, calls)
	if last := got[len(got)-1]; err != nil || strings.Contains(last, "--dependency") || !strings.HasSuffix(last, "distill-merge.sbatch") {
		t.Errorf("--merge: %v, %q\n%s", err, last, out)
	}
}

// TestSubmitResumeLeavesQueuedTasks: a task of an earlier submission that
// is still queued (or running) is not submitted again by --resume: the
// new merge waits for it and for the tasks submitted again.
func TestSubmitResumeLeavesQueuedTasks(t *testing.T) {
	dir := t.TempDir()
	path, calls := fakeSlurm(t, dir)
	runs := filepath.Join(dir, "runs")
	env := []string{path, "PARTITIONS=4", "JOB_FILE=j.yaml", "RUNS=" + runs}
	if out, err := runScript(t, "submit.sh", env...); err != nil {
		t.Fatalf("submit.sh: %v\n%s", err, out)
	}
	// Worker 0 finished; 1 failed; 2 runs and 3 waits in the queue.
	for i, status := range []string{"finished", "failed", "running"} {
		os.MkdirAll(filepath.Join(runs, fmt.Sprintf("part-%d", i)), 0o755)
		os.WriteFile(filepath.Join(runs, fmt.Sprintf("part-%d", i), "report.json"), []byte(`{"status": "`+status+`"}`), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "queue"), []byte("4001 2 RUNNING\n4001 3 PENDING\n"), 0o644)
	out, err := runScriptArgs(t, "submit.sh", []string{"--resume"}, env...)
	if err != nil {
		t.Fatalf("submit.sh --resume: %v\n%s", err, out)
	}
	got := readCalls(t, calls)[2:]
	if len(got) != 3 || got[0] != "scancel 4002" || !strings.Contains(got[1], "--array=1 ") ||
		!strings.Contains(got[2], "--dependency=afterok:4003:4001_2:4001_3 ") {
		t.Errorf("--resume's calls:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(out, "2,3 still queued or running") {
		t.Errorf("--resume says %q", out)
	}

	// Every unfinished task still queued: no new array, a merge after them.
	os.WriteFile(filepath.Join(dir, "queue"), []byte("4001 2 RUNNING\n4001 3 PENDING\n4003 1 PENDING\n"), 0o644)
	out, err = runScriptArgs(t, "submit.sh", []string{"--resume"}, env...)
	got = readCalls(t, calls)[5:]
	if err != nil || len(got) != 2 || got[0] != "scancel 4004" || strings.Contains(got[1], "--array") ||
		!strings.Contains(got[1], "--dependency=afterok:4003_1:4001_2:4001_3 ") {
		t.Errorf("--resume with every task queued: %v\n%s\n%s", err, strings.Join(got, "\n"), out)
	}
}

// TestTimeLimitRequeues: the SIGTERM Slurm sends before the time limit
// reaches distill, which commits what is finished and exits 4, and the
// task requeues itself to resume.
func TestTimeLimitRequeues(t *testing.T) {
	dir := t.TempDir()
	bin := testbin.Command(t, "cmd/distill")
	answers := map[string]string{}
	var lines []string
	for i := range 200 {
		p := fmt.Sprintf("What is %d plus %d?", i, 2*i)
		answers[p] = fmt.Sprint(3 * i)
		lines = append(lines, fmt.Sprintf(`{"problem":%q,"answer":%q}`, p, answers[p]))
	}
	input := filepath.Join(dir, "problems.jsonl")
	os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	srv, url, stop, err := sim.Start(sim.Config{Answers: answers, Latency: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	jobFile := filepath.Join(dir, "job.yaml")
	os.WriteFile(jobFile, []byte(fmt.Sprintf("input: {paths: [%s]}\nrollout: {base_url: %q, model: simulated, n: 4}\nlimits: {concurrency: 4}\n", input, url)), 0o644)
	requeued := filepath.Join(dir, "requeued")
	os.WriteFile(filepath.Join(dir, "scontrol"), []byte("#!/bin/bash\necho \"$*\" > "+requeued+"\n"), 0o755)

	cmd := exec.Command("bash", "distill-array.sbatch")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=2", "SLURM_JOB_ID=4242",
		"JOB_FILE="+jobFile, "RUNS="+filepath.Join(dir, "runs"), "DISTILL="+bin)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for srv.Count() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM) // to the batch shell only, as --signal=B:TERM does
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("after SIGTERM the task exited with %v, want 4 (stopped, resumable)\n%s", err, out.String())
	}
	if b, err := os.ReadFile(requeued); err != nil || strings.TrimSpace(string(b)) != "requeue 4242" {
		t.Errorf("the task did not requeue itself: %q, %v\n%s", b, err, out.String())
	}
	rep, _, _ := pipeline.ReadReport(filepath.Join(dir, "runs", "part-1"))
	if rep.Status != pipeline.StatusStopped || rep.StoppedBy != pipeline.StopInterrupt {
		t.Errorf("the worker's report says %s (%s), want stopped by the interrupt", rep.Status, rep.StoppedBy)
	}
}

// TestSIGTERMToTheWholeJobCommits: at its time limit (and on scancel)
// Slurm signals every process of the job, so SIGTERM reaches distill
// directly and again through the batch shell, which passes its own on:
// distill takes the second as the first, commits what is finished and
// exits 4, and the task requeues itself.
func TestSIGTERMToTheWholeJobCommits(t *testing.T) {
	dir := t.TempDir()
	bin := testbin.Command(t, "cmd/distill")
	answers := map[string]string{}
	var lines []string
	for i := range 200 {
		p := fmt.Sprintf("What is %d times %d?", i, 3)
		answers[p] = fmt.Sprint(3 * i)
		lines = append(lines, fmt.Sprintf(`{"problem":%q,"answer":%q}`, p, answers[p]))
	}
	input := filepath.Join(dir, "problems.jsonl")
	os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	srv, url, stop, err := sim.Start(sim.Config{Answers: answers, Latency: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	jobFile := filepath.Join(dir, "job.yaml")
	os.WriteFile(jobFile, []byte(fmt.Sprintf("input: {paths: [%s]}\nrollout: {base_url: %q, model: simulated, n: 4}\nlimits: {concurrency: 4}\noutput: {shard_rows: 1}\n", input, url)), 0o644)
	requeued := filepath.Join(dir, "requeued")
	os.WriteFile(filepath.Join(dir, "scontrol"), []byte("#!/bin/bash\necho \"$*\" > "+requeued+"\n"), 0o755)

	cmd := exec.Command("bash", "distill-array.sbatch")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_COUNT=1", "SLURM_JOB_ID=4343",
		"JOB_FILE="+jobFile, "RUNS="+filepath.Join(dir, "runs"), "DISTILL="+bin)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for srv.Count() < 40 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Slurm signals every process of the job at once: the batch shell's
	// trap passes its SIGTERM on to distill, and Slurm's own reaches
	// distill too, a moment apart, so distill gets two. The shell is
	// signalled first here, so that its trap has run (the task will
	// requeue) whatever distill does next, as it has when both are
	// signalled together; Slurm's own SIGTERM then reaches distill once it
	// has started to stop (it gives SIGINT back its default action then),
	// as the second. (Signalled the other way round, a distill that
	// finished stopping before the shell's signal came left a shell that
	// never knew it was stopped: no requeue, on a quiet machine.)
	distill := childOf(t, cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGTERM)
	for caught(t, distill, syscall.SIGINT) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	_ = syscall.Kill(distill, syscall.SIGTERM) // ESRCH when distill has already stopped
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("after SIGTERM to the whole job the task exited with %v, want 4 (stopped, resumable)\n%s", err, out.String())
	}
	rep, ok, _ := pipeline.ReadReport(filepath.Join(dir, "runs", "part-0"))
	if !ok || rep.Status != pipeline.StatusStopped || rep.StoppedBy != pipeline.StopInterrupt || rep.CorpusRows == 0 {
		t.Errorf("the worker's report says %s (%s) with %d records, want stopped by the interrupt with the finished records committed\n%s",
			rep.Status, rep.StoppedBy, rep.CorpusRows, out.String())
	}
	if b, err := os.ReadFile(requeued); err != nil || strings.TrimSpace(string(b)) != "requeue 4343" {
		t.Errorf("the task did not requeue itself: %q, %v", b, err)
	}
}

// childOf is the pid of the one child process of pid (from /proc).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, st := range stats {
			b, err := os.ReadFile(st)
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
			rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
			var state string
			var ppid int
			if _, err := fmt.Sscan(rest, &state, &ppid); err == nil && ppid == pid {
				var child int
				fmt.Sscan(filepath.Base(filepath.Dir(st)), &child)
				return child
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no child of %d", pid)
	return 0
}

// caught reports whether process pid catches sig (/proc/PID/status's
// SigCgt mask).
func caught(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false // gone
	}
	for _, line := range strings.Split(string(b), "\n") {
		if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			var m uint64
			fmt.Sscanf(strings.TrimSpace(mask), "%x", &m)
			return m&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}
