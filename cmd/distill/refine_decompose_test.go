package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/refine"
	"github.com/rubricforge/rubricforge/schema"
)

// decomposeArgs are the arguments of a refine --decompose against url.
func decomposeArgs(src, out, url string, extra ...string) []string {
	return append([]string{"refine", src, "--out", out, "--decompose", "--base-url", url, "--model", "simulated", "--json"}, extra...)
}

func readSummary(t *testing.T, stdout []byte) refine.Summary {
	t.Helper()
	var sum refine.Summary
	if err := json.Unmarshal(stdout, &sum); err != nil {
		t.Fatalf("refine --json: %v\n%s", err, stdout)
	}
	return sum
}

// TestRefineDecomposeReplacesSaturatedItems: on a planted corpus, refine
// --decompose sends the saturated items to the simulated distiller,
// keeps finer items only with a positive edge (and valid), puts them
// into the refined records with their verdicts, and the held-out AUROC
// (on the rollouts the distiller was not shown) is not lowered.
func TestRefineDecomposeReplacesSaturatedItems(t *testing.T) {
	t.Parallel()
	for _, style := range []string{schema.StyleSRaR, schema.StyleFactualProcess} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			// srar's --decompose runs in-process under the race detector:
			// it is the one TestRefineDecomposeNeverShowsTheHeldOutHalf
			// reads the requests of (made once). factual_process's is the
			// built distill: what it keeps is checked, not how it runs.
			var d decomposition
			if style == schema.StyleSRaR {
				d = sharedDecomposition(t)
			} else {
				d = decomposeBuiltSim(t, style, 24)
			}
			src, dec, simulator := d.src, d.dst, d.simulator
			// The plain refine is the reference: it runs as the built
			// command.
			out, err := exec.Command(buildDistill(t), "refine", src, "--out", filepath.Join(t.TempDir(), "plain"), "--json").Output()
			if err != nil {
				t.Fatalf("refine: %v\n%s", err, stderrOf(err))
			}
			before := readSummary(t, out)
			sum := readSummary(t, d.stdout)
			dc := sum.Decomposed
			t.Logf("%s: %+v; held-out AUROC %+v (plain refine %+v)", style, dc, sum.HeldOut.WithoutAnswer, before.HeldOut.WithoutAnswer)
			if dc.Units == 0 || dc.Proposed < 2*dc.Units || dc.Kept == 0 {
				t.Fatalf("decomposed %+v: want saturated items sent and finer items kept", dc)
			}
			for name, c := range map[string]refine.Change{"with ANSWER items": sum.HeldOut.WithAnswer, "without": sum.HeldOut.WithoutAnswer} {
				if c.Lowered || c.Records == 0 {
					t.Errorf("held-out AUROC %s with --decompose: %+v; want measured and not lowered", name, c)
				}
			}
			checkFinerItems(t, dec, simulator)
			if _, err := os.Stat(filepath.Join(dec, refine.DecomposeDir, "cache.db")); err != nil {
				t.Errorf("the decomposition's cache is not in DST: %v", err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dec), ".dec.refine-decompose")); err == nil {
				t.Error("the work directory is left after a finished refine")
			}
		})
	}
}

// checkFinerItems: every kept finer item has a positive fit edge, is in
// the refined record with verdicts on every judged rollout, and most kept
// ones are of the aligned kind the simulator planted.
func checkFinerItems(t *testing.T, dst string, simulator *sim.Server) {
	t.Helper()
	decisions := readDecisions(t, dst)
	in, err := audit.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	kept, aligned := 0, 0
	err = audit.Records(t.Context(), in, func(rec *schema.Record) error {
		d := decisions[rec.ID]
		for _, it := range d.Items {
			if !it.Finer {
				continue
			}
			if it.Drop == "" && it.Edge <= 0 {
				t.Errorf("%s: finer item %d kept with fit edge %g", rec.ID, it.ID, it.Edge)
			}
			if it.Drop != "" {
				continue
			}
			kept++
			item := rec.Rubric[it.NewID-1]
			if item.Text != it.Text {
				t.Errorf("%s: new item %d is %q, want the finer %q", rec.ID, it.NewID, item.Text, it.Text)
			}
			if kind, _ := simulator.PlantedKind(rec.Problem, item.Type, item.Text); kind == sim.PlantedAligned {
				aligned++
			}
			for _, r := range rec.Rollouts {
				if len(r.Satisfaction) > 0 && len(r.Satisfaction) != len(rec.Rubric) {
					t.Errorf("%s rollout %d: %d verdicts for %d items", rec.ID, r.Index, len(r.Satisfaction), len(rec.Rubric))
				}
			}
		}
		return nil
	}, func(p audit.Problem) { t.Errorf("reading %s: %+v", dst, p) })
	if err != nil {
		t.Fatal(err)
	}
	if kept == 0 || float64(aligned) < 0.8*float64(kept) {
		t.Errorf("%d of %d kept finer items are planted aligned, want >= 80%%", aligned, kept)
	}
}

// answeredBefore are the hashes of the requests simulator answered so far.
func answeredBefore(simulator *sim.Server) map[uint64]bool {
	out := map[uint64]bool{}
	for _, e := range simulator.Log() {
		if e.Status == 200 {
			out[e.Hash] = true
		}
	}
	return out
}

// resentSince counts the requests from the from-th of simulator's log on that
// ask again what was answered before.
func resentSince(simulator *sim.Server, from int, answered map[uint64]bool) int {
	n := 0
	for _, e := range simulator.Log()[from:] {
		if answered[e.Hash] {
			n++
		}
	}
	return n
}

// TestRefineDecomposeKilledResumes kills a real distill refine --decompose
// once the simulator has answered part of its requests: --out does not
// exist, the work directory holds the decomposition, and the same command
// finishes without asking again what was answered and written to the
// cache before the kill (at most the requests in flight at the kill are
// sent again), with the summary of a refine never killed.
func TestRefineDecomposeKilledResumes(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	src, simulator, url := plantedCorpusWith(t, schema.StyleSRaR, 24, func(c *sim.Config) {
		c.KeepLog, c.Latency = true, 3*time.Millisecond
	})
	dir := t.TempDir()
	dst := filepath.Join(dir, "dec")
	work := filepath.Join(dir, ".dec.refine-decompose")
	start := simulator.Count()
	args := append(decomposeArgs(src, dst, url), "--concurrency", "4")
	// About half of the 205 requests the decomposition sends.
	killed := runUntil(t, exec.Command(bin, args...), func() bool { return simulator.Count() >= start+100 })
	if !killed {
		t.Fatal("refine --decompose finished before 100 requests")
	}
	waitUntil(t, "the endpoint to answer the killed refine's requests", func() bool { return int64(len(simulator.Log())) == simulator.Count() })
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the kill --out exists (%v)", err)
	}
	answered := answeredBefore(simulator)
	inFlight := int(simulator.Count()-start) - cacheEntries(t, filepath.Join(work, refine.DecomposeDir))
	from := len(simulator.Log())
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("refine --decompose after the kill: %v", err)
	}
	resent := resentSince(simulator, from, answered)
	t.Logf("killed after %d requests, %d in flight; the resumed refine sent %d, %d of them again", from-int(start), inFlight, len(simulator.Log())-from, resent)
	if resent > max(inFlight, 0) {
		t.Errorf("the resumed refine asked %d answered requests again, more than the %d in flight at the kill", resent, inFlight)
	}
	sum := readSummary(t, out)
	// The refine never killed is the online decomposition of the same
	// corpus other tests check (made once, against a simulator configured
	// as this one).
	ref := sharedDecomposition(t)
	if ref.src != src {
		t.Fatalf("the shared decomposition refines %s, this test %s", ref.src, src)
	}
	clean := ref.dst
	want := readSummary(t, ref.stdout)
	sum.Decomposed.Requests, want.Decomposed.Requests = 0, 0
	sum.Fingerprint, want.Fingerprint = "", ""
	want.Settings["refined_from"], sum.Settings["refined_from"] = "", ""
	if g, w := mustJSON(t, sum), mustJSON(t, want); g != w {
		t.Errorf("after a kill and a resume the summary is\n%s\nwithout a kill\n%s", g, w)
	}
	a, _ := os.ReadFile(filepath.Join(dst, refine.RecordsName))
	b, _ := os.ReadFile(filepath.Join(clean, refine.RecordsName))
	if !bytes.Equal(a, b) {
		t.Error("the per-record decisions differ between the resumed and the clean refine")
	}
}

// TestRefineDecomposeBudgetStopResumes: a --max-total-tokens the
// decomposition reaches stops refine with exit 4 and no --out; the same
// command with a larger budget resumes it and sends no answered request
// again.
//
// Both refines are the built distill: the subject is the stop and the
// resume, not how the decomposition runs (the shared decomposition runs
// in-process under the race detector).
func TestRefineDecomposeBudgetStopResumes(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	src, simulator, url := plantedCorpusWith(t, schema.StyleSRaR, 24, func(c *sim.Config) { c.KeepLog = true })
	dir := t.TempDir()
	dst := filepath.Join(dir, "dec")
	start := simulator.Count()
	cmd := exec.Command(bin, decomposeArgs(src, dst, url, "--max-total-tokens", "40000")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); !exitedWith(err, exitStopped) {
		t.Fatalf("refine --decompose under a small budget: %v, want exit %d\n%s", err, exitStopped, stderr.String())
	}
	if !strings.Contains(stderr.String(), "budget") || !strings.Contains(stderr.String(), "raise --max-cost-usd or --max-total-tokens") {
		t.Errorf("the stop does not say the budget stopped it and what to do:\n%s", stderr.String())
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a budget stop --out exists (%v)", err)
	}
	answered := answeredBefore(simulator)
	from := len(simulator.Log())
	inFlight := from - int(start) - cacheEntries(t, filepath.Join(dir, ".dec.refine-decompose", refine.DecomposeDir))
	stdout, err := exec.Command(bin, decomposeArgs(src, dst, url, "--max-total-tokens", "100000000")...).Output()
	if err != nil {
		t.Fatalf("refine --decompose with a larger budget: %v\n%s", err, stderrOf(err))
	}
	n := resentSince(simulator, from, answered)
	t.Logf("stopped after %d requests, %d of them not in the cache; the resumed refine asked %d again", from-int(start), inFlight, n)
	if n > max(inFlight, 0) {
		t.Errorf("the resumed refine asked %d answered requests again, more than the %d not cached at the stop", n, inFlight)
	}
	if sum := readSummary(t, stdout); sum.Decomposed.Kept == 0 || len(answered) == 0 {
		t.Errorf("after the resume: %+v, %d requests before the stop", sum.Decomposed, len(answered))
	}
}

// TestRefineDecomposeInBatches: refine --decompose --batch sends the
// decomposition's requests through the endpoint's Batch API in waves
// (decompose, judge, empirical), none online and none answered twice, and
// writes the refinement the online requests write.
//
// The batched refine is the built distill: the subject is which requests
// go in which batches and what the refinement writes, not how it runs
// (the shared online decomposition runs in-process under the race
// detector, and pipeline's batch tests run batch mode so); the endpoint
// that counts the batches stays in the test.
func TestRefineDecomposeInBatches(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	src, simulator, url := plantedCorpusWith(t, schema.StyleSRaR, 24, func(c *sim.Config) { c.BatchDir = t.TempDir() })
	dir := t.TempDir()
	batched := filepath.Join(dir, "batched")
	before := simulator.Count()
	out, err := exec.Command(bin, decomposeArgs(src, batched, url, "--batch", "--batch-poll", "50ms")...).Output()
	if err != nil {
		t.Fatalf("refine --decompose --batch: %v\n%s", err, stderrOf(err))
	}
	got := readSummary(t, out)
	st := simulator.BatchStats()
	t.Logf("batches: %+v; online requests %d", st, simulator.Count()-before)
	if st.BatchesCreated < 3 || st.RequestsRepeated != 0 || simulator.Count() != before {
		t.Errorf("batch stats %+v, %d online requests: want at least 3 batches (decompose, judge, empirical), no request answered twice, none online", st, simulator.Count()-before)
	}
	// The online refine is the reference: the online decomposition of the
	// same corpus other tests check (made once, against a simulator
	// configured as this one).
	ref := sharedDecomposition(t)
	if ref.src != src {
		t.Fatalf("the shared decomposition refines %s, this test %s", ref.src, src)
	}
	want := readSummary(t, ref.stdout)
	got.Decomposed.Requests, want.Decomposed.Requests = 0, 0
	got.Settings["refined_from"], want.Settings["refined_from"] = "", ""
	got.Fingerprint, want.Fingerprint = "", ""
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("in batches the summary is\n%s\nonline\n%s", g, w)
	}
}

// TestRefineDecomposeBadFlags: --decompose without an endpoint, and the
// request flags without --decompose, are usage errors (exit 2) that say
// what to do and leave neither --out nor a work directory.
func TestRefineDecomposeBadFlags(t *testing.T) {
	t.Parallel()
	src := smallCorpus(t, true)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no endpoint", []string{"--decompose"}, "no endpoint given (use --base-url"},
		{"no model", []string{"--decompose", "--base-url", "http://127.0.0.1:1/v1"}, "no model given (use --model"},
		{"flags without decompose", []string{"--model", "m", "--max-total-tokens", "5"}, "--max-total-tokens, --model: these flags apply only to --decompose's requests"},
		{"config without decompose", []string{"--config", "job.yaml"}, "--config: these flags apply only"},
		{"plan without decompose", []string{"--plan"}, "--plan projects --decompose's requests; add --decompose"},
		{"plan with dry-run", []string{"--decompose", "--plan", "--dry-run"}, "--plan and --dry-run: give one"},
		{"sample without plan", []string{"--sample", "5"}, "--sample applies only to --plan"},
		{"sample zero", []string{"--decompose", "--plan", "--sample", "0"}, "--sample 0: want at least 1 record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"refine", src, "--out", out}, tc.args...), &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, want %d; stderr does not say %q:\n%s", code, exitUsage, tc.want, stderr.String())
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 0 {
				t.Errorf("left %v in --out's directory", entries)
			}
		})
	}
}

// TestRefineDecomposePlan: refine --decompose --plan runs the
// decomposition of a sample of the records to decompose, prints
// distill plan's table with the decompose stage, writes plan.json in the
// decomposition's run directory and no DST; the projected requests are
// within 10% of what the real refine then sends over every session (the
// pilot's included), and the real refine asks nothing the pilot was
// answered again.
func TestRefineDecomposePlan(t *testing.T) {
	t.Parallel()
	src, simulator, url := plantedCorpusWith(t, schema.StyleSRaR, 24, func(c *sim.Config) { c.KeepLog = true })
	dir := t.TempDir()
	dst := filepath.Join(dir, "dec")
	from := len(simulator.Log())
	var stdout, stderr bytes.Buffer
	// 3 of the 6 records to decompose: the projection scales the pilot.
	if code := run(decomposeArgs(src, dst, url, "--plan", "--sample", "3"), &stdout, &stderr); code != exitOK {
		t.Fatalf("refine --decompose --plan: exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"3 sampled problems of", "decompose", "judge", "empirical", "total", "without --plan decomposes every record"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the plan does not say %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--plan wrote --out (%v)", err)
	}
	doc, err := corpus.ReadPlan(filepath.Join(dir, ".dec.refine-decompose", refine.DecomposeDir))
	if err != nil {
		t.Fatalf("plan.json of the decomposition: %v", err)
	}
	pilot := len(simulator.Log()) - from
	if pilot == 0 || doc.Stages[0].Stage != pipeline.StageDecompose {
		t.Fatalf("the pilot sent %d requests; stages %+v: want the decompose stage first", pilot, doc.Stages)
	}
	answered := answeredBefore(simulator)
	after := len(simulator.Log())
	// The real refine is the measure the plan is held to: it runs as the
	// built command (the pilot, the code under test, runs in-process under
	// the race detector; the other decompose tests run a whole --decompose
	// in-process).
	out, err := exec.Command(buildDistill(t), decomposeArgs(src, dst, url)...).Output()
	if err != nil {
		t.Fatalf("refine --decompose after the plan: %v\n%s", err, stderrOf(err))
	}
	if n := resentSince(simulator, after, answered); n != 0 {
		t.Errorf("the real refine asked %d requests the plan's pilot was answered again", n)
	}
	sum := readSummary(t, out)
	real, projected := float64(sum.Decomposed.Requests), doc.Total.Requests
	t.Logf("%d records to decompose, 3 sampled; pilot %d requests; projected %.0f (%.0f-%.0f); the real refine %.0f (%d this session)",
		sum.Decomposed.Units, pilot, projected.Value, projected.Low, projected.High, real, len(simulator.Log())-after)
	if real != float64(pilot+len(simulator.Log())-after) {
		t.Errorf("the refine counts %.0f requests over its sessions; the endpoint answered %d", real, pilot+len(simulator.Log())-after)
	}
	if math.Abs(projected.Value-real) > 0.10*real {
		t.Errorf("projected %.0f requests, the real refine sent %.0f: off by more than 10%%", projected.Value, real)
	}
	if doc.Input.Unique != sum.Decomposed.Units {
		t.Errorf("the plan projects %d records to decompose; the refine decomposed %d", doc.Input.Unique, sum.Decomposed.Units)
	}
}
