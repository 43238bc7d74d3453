package livestate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/schema"
)

func testSettings() Settings {
	s := DefaultSettings()
	s.Window, s.MinRollouts, s.Saturation, s.Reinstate, s.RetireSaturated, s.AdmitGroups, s.MaxAdmitted = 4, 8, 0.95, 0.6, true, 2, 1
	return s
}

func testLabel(id string) *schema.Label {
	return &schema.Label{ID: id, Question: "What is " + id + "?", GroundTruth: "5", Rubric: []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "adds", Weight: 1, Polarity: 1},
		{ID: 2, Type: schema.TypePitfall, Text: "multiplies", Weight: 1, Polarity: -1},
		{ID: 3, Type: schema.TypeAnswer, Text: "answers 5", Weight: 1, Polarity: 1},
	}}
}

var fixedNow = func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }

// step is one operation of the workload: a group (correct of 4, the
// candidate satisfied by the correct ones) or an elicitation.
type step struct {
	problem string
	correct int
	elicit  bool
	hash    uint64 // the group's identity
}

// workload: the ANSWER item saturates over the first two groups of each
// problem and retires, a candidate is elicited for p1 and admitted (it
// follows correctness), the policy then gets everything wrong and the
// ANSWER item comes back.
func workload() []step {
	var out []step
	for range 2 {
		for _, p := range []string{"p1", "p2", "p3"} {
			out = append(out, step{problem: p, correct: 4})
		}
	}
	out = append(out, step{problem: "p1", elicit: true})
	for k := range 8 {
		for _, p := range []string{"p1", "p2", "p3"} {
			out = append(out, step{problem: p, correct: []int{3, 1, 2, 0, 0, 1, 0, 0}[k]})
		}
	}
	for i := range out {
		out[i].hash = uint64(i + 1)
	}
	return out
}

// run applies the workload to st up to the first error; it returns how
// many steps were acknowledged.
func run(t *testing.T, st *Store, steps []step) (acked int, err error) {
	t.Helper()
	for i, s := range steps {
		v, err := st.Begin(testLabel(s.problem))
		if err != nil {
			return i, err
		}
		if s.elicit {
			c := Candidate{Item: schema.Item{Type: schema.TypeProcess, Text: "checks by subtraction", Weight: 2}, Evidence: Evidence{Reason: "sound"}}
			if err := st.AddCandidates(s.problem, []Candidate{c}, []Candidate{{Item: schema.Item{Type: schema.TypeProcess, Text: "is polite", Weight: 1}, Evidence: Evidence{Reason: "generic"}}}, 0.01); err != nil {
				return i, err
			}
			continue
		}
		g := Group{Problem: s.problem, Version: v.Version, Hash: s.hash, Scheme: "rgr", N: 4, Correct: s.correct}
		for _, it := range v.Judged {
			sat := 0
			switch it.ID {
			case 1:
				sat = 4 // always satisfied: saturates and stays retired
			case 3, 4:
				sat = s.correct
			}
			g.Items = append(g.Items, [3]int{int(it.ID), sat, min(sat, s.correct)})
		}
		if err := st.Record(g); err != nil {
			return i, err
		}
	}
	return len(steps), nil
}

func snapshot(st *Store) map[string]ProblemStats {
	out := map[string]ProblemStats{}
	for _, p := range []string{"p1", "p2", "p3"} {
		if s, ok := st.Stats(p); ok {
			out[p] = s
		}
	}
	return out
}

// TestWorkloadDecisions: the decisions of the workload, as designed.
func TestWorkloadDecisions(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := run(t, st, workload()); err != nil {
		t.Fatal(err)
	}
	p1, _ := st.Stats("p1")
	var kinds []string
	for _, e := range p1.Events {
		kinds = append(kinds, fmt.Sprintf("%s %d v%d", e.Kind, e.Item, e.Version))
	}
	want := []string{"retire 1 v2", "retire 2 v3", "retire 3 v4", "candidate 4 v0", "reject 0 v0", "admit 4 v5", "reinstate 3 v6"}
	if !slices.Equal(kinds, want) {
		t.Errorf("p1's events %q, want %q", kinds, want)
	}
	for _, e := range p1.Events {
		if e.Kind == "admit" && (e.Evidence.Corr == nil || *e.Evidence.Corr <= 0.2 || e.Evidence.Groups != 2) {
			t.Errorf("admission evidence %+v: want corr > 0.2 over 2 groups", e.Evidence)
		}
	}
	if st.ElicitSpent() != 0.01 {
		t.Errorf("elicitation spent %v", st.ElicitSpent())
	}
}

// TestReplayGivesTheSameState: reopening the directory, and reading it
// without writing, give every problem the same versions, decisions and
// figures the live store had; a second Open of the same replica is
// refused.
func TestReplayGivesTheSameState(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, st, workload()); err != nil {
		t.Fatal(err)
	}
	live := snapshot(st)
	if _, err := Open(dir, Options{Settings: testSettings(), Replica: "r1"}); err == nil || !strings.Contains(err.Error(), "--replica-id") {
		t.Errorf("a second Open of r1: %v, want a refusal naming --replica-id", err)
	}
	st.Close()
	again, err := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := snapshot(again); !sameStats(got, live) {
		t.Errorf("reopened:\n%+v\nlive:\n%+v", got, live)
	}
	d, err := Read(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !sameStats(d.Problems, live) || len(d.Split) != 0 || !slices.Equal(d.Replicas, []string{"r1"}) {
		t.Errorf("read: %+v", d)
	}
}

func sameStats(a, b map[string]ProblemStats) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestDecisionCutOffIsWrittenAgain: a crash that keeps a group's line and
// loses the decision lines after it (they share one append) leaves a log
// whose replay recomputes them; Open writes them again.
func TestDecisionCutOffIsWrittenAgain(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, st, workload()[:5]); err != nil { // p2's second group retires items 1, 2, 3
		t.Fatal(err)
	}
	live := snapshot(st)
	st.Close()
	path := filepath.Join(dir, "r1.log")
	b, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(b, []byte("\n"))
	var kept []byte
	dropped := 0
	for _, l := range lines {
		if bytes.Contains(l, []byte(`"t":"retire","p":"p2"`)) {
			dropped++
			continue
		}
		kept = append(kept, l...)
	}
	if dropped != 3 {
		t.Fatalf("dropped %d retirements of p2, want 3", dropped)
	}
	// Keep the lines up to p2's group; what came after (the retirements
	// and p3's group) is what the crash lost.
	cut := bytes.LastIndex(kept, []byte(`"t":"group","p":"p2"`))
	end := bytes.IndexByte(kept[cut:], '\n') + cut + 1
	if err := os.WriteFile(path, kept[:end], 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.Repaired != 3 {
		t.Errorf("repaired %d decisions, want 3", again.Repaired)
	}
	if got := snapshot(again); got["p2"].Version != live["p2"].Version || len(got["p2"].Events) != len(live["p2"].Events) {
		t.Errorf("p2 after the repair: %+v, live %+v", got["p2"], live["p2"])
	}
}

// TestInconsistentLogRefused: a decision the statistics do not call for
// (a log edited by hand, or written under other settings without their
// session line) is refused with its line number.
func TestInconsistentLogRefused(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, st, workload()[:4]); err != nil {
		t.Fatal(err)
	}
	st.Close()
	path := filepath.Join(dir, "r1.log")
	b, _ := os.ReadFile(path)
	b = bytes.Replace(b, []byte(`"t":"retire","p":"p1","v":2,"id":1`), []byte(`"t":"retire","p":"p1","v":2,"id":3`), 1)
	os.WriteFile(path, b, 0o644)
	if _, err := Open(dir, Options{Settings: testSettings(), Replica: "r1"}); err == nil || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), "retire of item 1") {
		t.Errorf("Open of an edited log: %v", err)
	}
}

// TestBadGroupHashRefused: a group record whose hash does not parse is
// refused with its line, not read as hash 0 (which would take the next
// group with a bad hash for a retry of this one).
func TestBadGroupHashRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, st, workload()[:2]); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r1.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`"h":"[0-9a-f]+"`).ReplaceAll(b, []byte(`"h":"not-hex"`))
	if bytes.Equal(edited, b) {
		t.Fatal("the log holds no group hash")
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Settings: testSettings(), Replica: "r1"}); err == nil || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), `"not-hex"`) {
		t.Errorf("Open of a log with a bad group hash: %v", err)
	}
}

// TestSettingsChangeBetweenSessions: a session without retirement
// reinstates what an earlier one retired, at its first group, and a
// replay under each session's own settings agrees.
func TestSettingsChangeBetweenSessions(t *testing.T) {
	dir := t.TempDir()
	st, _ := Open(dir, Options{Settings: testSettings(), Replica: "r1", Now: fixedNow})
	run(t, st, workload()[:6])
	st.Close()
	off := testSettings()
	off.RetireSaturated = false
	st, err := Open(dir, Options{Settings: off, Replica: "r1", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Record(Group{Problem: "p1", Version: 4, Hash: 99, N: 4, Correct: 2, Items: [][3]int{{1, 4, 2}, {2, 0, 0}, {3, 2, 2}}}); err != nil {
		t.Fatal(err)
	}
	p1, _ := st.Stats("p1")
	st.Close()
	if p1.Version != 7 {
		t.Errorf("version %d after the three retired items came back, want 7", p1.Version)
	}
	d, err := Read(nil, dir)
	if err != nil || d.Problems["p1"].Version != 7 {
		t.Errorf("read: %v, version %d", err, d.Problems["p1"].Version)
	}
}

// TestCrashLosesNoAcknowledgedGroup runs the workload on a file system
// that loses power at every operation in turn (unsynced bytes torn at a
// random length): the state reopened after the crash holds every group
// and elicitation that was acknowledged, at most the one in flight more,
// and each problem's version is the one its groups give.
func TestCrashLosesNoAcknowledgedGroup(t *testing.T) {
	steps := workload()
	// Reference: the version of each problem after k of its operations.
	ref := map[string][]int64{}
	{
		fs := crashfs.New()
		st, err := Open("/state", Options{Settings: testSettings(), Replica: "r1", FS: fs, Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			if _, err := run(t, st, steps[i:i+1]); err != nil {
				t.Fatal(err)
			}
			s, _ := st.Stats(steps[i].problem)
			ref[steps[i].problem] = append(ref[steps[i].problem], s.Version)
		}
		st.Close()
	}
	fs := crashfs.New()
	st, err := Open("/state", Options{Settings: testSettings(), Replica: "r1", FS: fs, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	run(t, st, steps)
	st.Close()
	total := len(fs.Ops())
	rng := rand.New(rand.NewPCG(1, 2))
	for at := 0; at < total; at++ {
		fs := crashfs.New()
		fs.CrashAt(at)
		st, err := Open("/state", Options{Settings: testSettings(), Replica: "r1", FS: fs, Now: fixedNow})
		acked := 0
		if err == nil {
			acked, _ = run(t, st, steps)
			st.Close()
		}
		after := fs.CrashClone(crashfs.CrashOptions{Tear: rng})
		re, err := Open("/state", Options{Settings: testSettings(), Replica: "r1", FS: after, Now: fixedNow})
		if err != nil {
			t.Fatalf("crash at %d (%d acknowledged): reopening: %v", at, acked, err)
		}
		for p, versions := range ref {
			ackedOps := 0
			for _, s := range steps[:acked] {
				if s.problem == p {
					ackedOps++
				}
			}
			s, ok := re.Stats(p)
			if ackedOps > 0 && !ok {
				t.Fatalf("crash at %d: problem %s with %d acknowledged operations is gone", at, p, ackedOps)
			}
			if !ok {
				continue
			}
			ops := int(s.Groups) + countKind(s.Events, "candidate")
			if ops < ackedOps || ops > ackedOps+1 {
				t.Fatalf("crash at %d: %s holds %d operations, %d were acknowledged", at, p, ops, ackedOps)
			}
			if ops > 0 && s.Version != versions[ops-1] {
				t.Fatalf("crash at %d: %s at version %d after %d operations, want %d", at, p, s.Version, ops, versions[ops-1])
			}
		}
		re.Close()
	}
}

func countKind(events []Event, kind string) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// TestClaims: a problem claimed by one replica is refused to another
// sharing the directory; the first keeps it across a restart.
func TestClaims(t *testing.T) {
	dir := t.TempDir()
	a, _ := Open(dir, Options{Settings: testSettings(), Replica: "a"})
	if _, err := a.Begin(testLabel("p1")); err != nil {
		t.Fatal(err)
	}
	b, _ := Open(dir, Options{Settings: testSettings(), Replica: "b"})
	defer b.Close()
	if _, err := b.Begin(testLabel("p1")); !errors.Is(err, ErrClaimed) || !strings.Contains(err.Error(), `replica "a"`) {
		t.Errorf("b begins a's problem: %v", err)
	}
	if _, err := b.Begin(testLabel("p2")); err != nil {
		t.Errorf("b begins a new problem: %v", err)
	}
	a.Close()
	a, err := Open(dir, Options{Settings: testSettings(), Replica: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Begin(testLabel("p1")); err != nil {
		t.Errorf("a after a restart: %v", err)
	}
	if _, err := Open(dir, Options{Replica: "../x"}); err == nil {
		t.Error("a replica name with a path in it was taken")
	}
	d, err := Read(fsys.OS, dir)
	if err != nil || len(d.Replicas) != 2 {
		t.Errorf("read: %v %+v", err, d)
	}
}
