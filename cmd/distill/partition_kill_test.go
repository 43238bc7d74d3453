package main

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/schema"
)

// buildDistill is this command built from the sources as they are, shared
// with every test and package of this go test run (testbin).
func buildDistill(t *testing.T) string {
	t.Helper()
	return testbin.Command(t, "cmd/distill")
}

// testSeed is RUBRICFORGE_TEST_SEED when set (to replay a failure), else
// fixed; it is logged.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(20261125)
	if s := os.Getenv("RUBRICFORGE_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RUBRICFORGE_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("random seed %d (set RUBRICFORGE_TEST_SEED to replay another)", seed)
	return seed
}

// worker is one partitioned distill process and the simulated endpoint it
// sends to (one each, so that each worker's requests are known; every
// endpoint has the same configuration, so they answer alike).
type worker struct {
	dir string
	srv *sim.Server
	url string
}

// TestPartitionedWorkersKilledAndMerged: four distill workers, one
// partition each, run as processes over one input; two of them are killed
// with SIGKILL at random points and started again, and the merge is killed
// once part way and run again. The merged corpus holds every id once in
// readable shards, its records are those of one machine's run of the job,
// and a restarted worker sends again no more requests than it had in
// flight when it was killed.
func TestPartitionedWorkersKilledAndMerged(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	rng := rand.New(rand.NewPCG(testSeed(t), 19))
	dir := t.TempDir()
	input := filepath.Join(dir, "problems.jsonl")
	// 60 problems: 60 to 98 requests a worker (n 4), enough for a kill
	// part way through any of them.
	answers := writeProblems(t, input, 60)
	cfg := sim.Config{Answers: answers, Latency: 5 * time.Millisecond, KeepLog: true}
	start := func() (*sim.Server, string) {
		srv, url, stop, err := sim.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return srv, url
	}
	args := func(out, url string, extra ...string) []string {
		return append([]string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated",
			"--n", "4", "--concurrency", "8", "--shard-rows", "3", "--checkpoint-interval", "1s", "--quiet"}, extra...)
	}

	const k = 4
	workers := make([]*worker, k)
	for i := range workers {
		srv, url := start()
		workers[i] = &worker{dir: filepath.Join(dir, fmt.Sprintf("part-%d", i)), srv: srv, url: url}
	}
	victims := rng.Perm(k)[:2]
	killAt := map[int]int64{victims[0]: 8 + rng.Int64N(45), victims[1]: 8 + rng.Int64N(45)} // requests sent before the kill
	var wg sync.WaitGroup
	inFlight := make([]int, k)
	sentBefore := make([]map[uint64]bool, k)
	for i, w := range workers {
		wg.Go(func() {
			cmd := exec.Command(bin, args(w.dir, w.url, "--partition", fmt.Sprintf("%d/%d", i, k))...)
			at, victim := killAt[i]
			killed := runUntil(t, cmd, func() bool { return victim && w.srv.Count() >= at })
			if !killed {
				return
			}
			waitUntil(t, "the endpoint to answer the killed worker's requests", func() bool { return int64(len(w.srv.Log())) == w.srv.Count() })
			sentBefore[i] = map[uint64]bool{}
			for _, e := range w.srv.Log() {
				sentBefore[i][e.Hash] = true
			}
			inFlight[i] = len(w.srv.Log()) - cacheEntries(t, w.dir)
			t.Logf("worker %d/%d killed after %d requests, %d of them in flight", i, k, len(w.srv.Log()), inFlight[i])
		})
	}
	wg.Wait()
	for _, i := range victims {
		if sentBefore[i] == nil {
			t.Fatalf("worker %d finished before its kill point %d", i, killAt[i])
		}
		w := workers[i]
		if st, err := os.ReadFile(filepath.Join(w.dir, "report.json")); err == nil && bytes.Contains(st, []byte(`"status": "finished"`)) {
			t.Fatalf("worker %d reports finished after its kill", i)
		}
		from := len(w.srv.Log())
		if out, err := exec.Command(bin, args(w.dir, w.url, "--partition", fmt.Sprintf("%d/%d", i, k))...).CombinedOutput(); err != nil && !exitedWith(err, exitProblems) {
			t.Fatalf("restarting worker %d: %v\n%s", i, err, out)
		}
		resent := 0
		for _, e := range w.srv.Log()[from:] {
			if sentBefore[i][e.Hash] {
				resent++
				delete(sentBefore[i], e.Hash)
			}
		}
		if resent > inFlight[i] {
			t.Errorf("restarted worker %d sent %d requests again, more than the %d in flight at its kill", i, resent, inFlight[i])
		}
	}

	parts := make([]string, k)
	for i, w := range workers {
		parts[i] = w.dir
	}
	merged := filepath.Join(dir, "all")
	mergeArgs := append(append([]string{"merge"}, parts...), "--out", merged, "--shard-rows", "2")
	killAfterRows := 1 + rng.Int64N(30)
	if !runUntil(t, exec.Command(bin, mergeArgs...), func() bool {
		m, err := corpus.ReadManifest(merged)
		return err == nil && m.Rows >= killAfterRows
	}) {
		t.Logf("the merge finished before its kill point (%d rows)", killAfterRows)
	}
	if out, err := exec.Command(bin, mergeArgs...).CombinedOutput(); err != nil {
		t.Fatalf("merge after a kill: %v\n%s", err, out)
	}

	// One machine's run is the reference: its endpoint is the built simllm
	// with the same answers (latency and log change nothing it answers).
	simArgs, err := simllmArgs(sim.Config{}, input)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := startSimllm(testbin.Command(t, "examples/simllm"), simArgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	whole := filepath.Join(dir, "whole")
	if out, err := exec.Command(bin, args(whole, url)...).CombinedOutput(); err != nil && !exitedWith(err, exitProblems) {
		t.Fatalf("one machine's run: %v\n%s", err, out)
	}
	got, want := recordsByID(t, merged), recordsByID(t, whole)
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) || len(w) == 0 {
		t.Fatalf("the merged corpus holds %d ids, one machine's run %d; they differ", len(g), len(w))
	}
	for id, w := range want {
		g := got[id]
		if g.Problem != w.Problem || g.Answer != w.Answer || !reflect.DeepEqual(g.Rubric, w.Rubric) || !reflect.DeepEqual(g.Rollouts, w.Rollouts) {
			t.Errorf("record %s differs from one machine's run", id)
		}
	}
	if v, err := corpus.Verify(merged); err != nil || !v.OK() {
		t.Errorf("the merged corpus does not verify: %+v, %v", v, err)
	}
	files, _ := filepath.Glob(filepath.Join(merged, "shards", "*.parquet"))
	for _, f := range files {
		if err := corpus.ScanShard(f, func(*schema.Record) error { return nil }); err != nil {
			t.Errorf("shard %s: %v", f, err)
		}
	}
}

// runUntil runs cmd and kills it with SIGKILL once killNow holds; it
// reports whether it killed it (false: it ended first, successfully or with
// exit 3).
func runUntil(t *testing.T, cmd *exec.Cmd, killNow func() bool) bool {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return false
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			if err != nil && !exitedWith(err, exitProblems) {
				t.Errorf("%v failed on its own: %v\n%s", cmd.Args, err, stderr.String())
			}
			return false
		case <-tick.C:
			if killNow() {
				cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return true
			}
		}
	}
}

func exitedWith(err error, code int) bool {
	ee, ok := err.(*exec.ExitError)
	return ok && ee.ExitCode() == code
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("gave up waiting for %s", what)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// cacheEntries is the number of answered requests in a run's cache.
func cacheEntries(t *testing.T, runDir string) int {
	t.Helper()
	c, err := cache.Open(filepath.Join(runDir, "cache.db"))
	if err != nil {
		t.Errorf("opening the cache: %v", err)
		return 0
	}
	defer c.Close()
	n, err := c.Len()
	if err != nil {
		t.Error(err)
	}
	return n
}

// recordsByID reads a run directory's records, failing on an id twice.
func recordsByID(t *testing.T, dir string) map[string]*schema.Record {
	t.Helper()
	out := map[string]*schema.Record{}
	err := corpus.ReadAll(dir, func(r *schema.Record) error {
		if _, dup := out[r.ID]; dup {
			return fmt.Errorf("id %s is in %s twice", r.ID, dir)
		}
		out[r.ID] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
