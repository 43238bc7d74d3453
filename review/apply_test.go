package review

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/schema"
)

func TestCheckEdit(t *testing.T) {
	tests := []struct {
		name, style string
		s           ItemState
		says        string // "" when the edit holds
	}{
		{"fine", schema.StyleSRaR, ItemState{"SUGGEST", "Checks the base case.", 1}, ""},
		{"empty text", schema.StyleSRaR, ItemState{"SUGGEST", "", 1}, "text is blank"},
		{"blank text", schema.StyleSRaR, ItemState{"SUGGEST", "  \t", 1}, "text is blank"},
		{"negative weight", schema.StyleSRaR, ItemState{"SUGGEST", "x", -1}, "weight -1: it must be a number above 0"},
		{"zero weight", schema.StyleSRaR, ItemState{"SUGGEST", "x", 0}, "weight 0"},
		{"NaN weight", schema.StyleSRaR, ItemState{"SUGGEST", "x", math.NaN()}, "weight NaN"},
		{"a type of the other style", schema.StyleSRaR, ItemState{"FACTUAL", "x", 1}, `type "FACTUAL" is not a srar item type`},
		{"two lines in srar", schema.StyleSRaR, ItemState{"SUGGEST", "a\nb", 1}, "line break"},
		{"factual weight not 1-5", schema.StyleFactualProcess, ItemState{"FACTUAL", "x", 7}, "integer from 1 to 5"},
		{"too long", schema.StyleSRaR, ItemState{"SUGGEST", strings.Repeat("x", maxTextLen+1), 1}, "at most 4000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckEdit(tt.style, tt.s)
			switch {
			case tt.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.says != "" && (err == nil || !errors.Is(err, ErrInvalidEdit) || !strings.Contains(err.Error(), tt.says)):
				t.Fatalf("error %v; want ErrInvalidEdit saying %q", err, tt.says)
			}
		})
	}
}

func decide(who, action string, at time.Time, rec string, item int32) Entry {
	return Entry{Time: at, Reviewer: who, Record: rec, Item: item, Action: action}
}

func decisions(states ...*State) *Decisions {
	d := &Decisions{byItem: map[ItemKey][]Entry{}}
	for _, s := range states {
		d.Logs = append(d.Logs, "review/"+s.Reviewer+".jsonl")
		d.Reviewers = append(d.Reviewers, s.Reviewer)
		d.States = append(d.States, s)
		for k, e := range s.Items {
			d.byItem[k] = append(d.byItem[k], e)
		}
	}
	return d
}

func stateOfEntries(who string, es ...Entry) *State {
	for i := range es {
		es[i].Seq = int64(i + 1)
	}
	return Replay(who, es)
}

func TestPolicies(t *testing.T) {
	alice := stateOfEntries("alice",
		decide("alice", ActionReject, t0, "r", 1),
		decide("alice", ActionAccept, t0, "r", 2),
		decide("alice", ActionAccept, t0, "r", 3))
	bob := stateOfEntries("bob",
		decide("bob", ActionAccept, t0.Add(time.Minute), "r", 1),
		decide("bob", ActionAccept, t0, "r", 2),
		decide("bob", ActionReject, t0.Add(-time.Minute), "r", 3))
	d := decisions(alice, bob)
	if _, conflicts, err := d.Resolve(Policy{}); !errors.Is(err, ErrConflicts) || len(conflicts) != 2 ||
		!strings.Contains(err.Error(), "record r item 1: alice reject, bob accept") {
		t.Fatalf("no policy: %d conflicts, %v; want the two listed and refused", len(conflicts), err)
	}
	tests := []struct {
		policy string
		want   map[int32]string // item -> action settled; missing: left as it is
	}{
		{"latest", map[int32]string{1: "bob", 2: "alice", 3: "alice"}},
		{"unanimous", map[int32]string{2: "alice"}},
		{"reviewer:bob", map[int32]string{1: "bob", 2: "bob", 3: "bob"}},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			p, err := ParsePolicy(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := d.Resolve(p)
			if err != nil {
				t.Fatal(err)
			}
			for item := int32(1); item <= 3; item++ {
				e, ok := got[ItemKey{"r", item}]
				want, settled := tt.want[item]
				if ok != settled || (ok && e.Reviewer != want && !(item == 2 && tt.policy != "reviewer:bob")) {
					t.Errorf("item %d: settled %v by %q; want settled %v by %q", item, ok, e.Reviewer, settled, want)
				}
			}
		})
	}
	if _, err := ParsePolicy("loudest"); err == nil {
		t.Error("ParsePolicy took loudest")
	}
	if _, _, err := d.Resolve(Policy{Kind: PolicyReviewer, Reviewer: "carol"}); err == nil {
		t.Error("reviewer:carol settled with no log of carol's")
	}
}

// TestApplyDropsEditsAndRenumbers: a rejected item is dropped, an edit
// applied (its old figures and verdicts dropped), ids 1..n again with the
// rollouts' verdicts following them; a decision made on other text is
// stale and not applied; a record whose rubric no longer holds is dropped.
func TestApplyDropsEditsAndRenumbers(t *testing.T) {
	recs, err := reviewtest.Records(2)
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := recs[0], recs[1]
	item := func(r schema.Record, id int32) string { return r.Rubric[id-1].Text }
	d := decisions(stateOfEntries("alice",
		Entry{Time: t0, Reviewer: "alice", Record: r0.ID, Item: 2, Action: ActionReject, Before: stateOf(r0.Rubric[1])},
		Entry{Time: t0, Reviewer: "alice", Record: r0.ID, Item: 4, Action: ActionEdit, Before: stateOf(r0.Rubric[3]), After: &ItemState{"BONUS", "Shows both counts agree.", 2}},
		Entry{Time: t0, Reviewer: "alice", Record: r0.ID, Item: 3, Action: ActionAccept, Before: &ItemState{"PITFALL", "some other text", 1}},
		Entry{Time: t0, Reviewer: "alice", Record: r1.ID, Item: 5, Action: ActionReject, Before: stateOf(r1.Rubric[4])},
	))
	a, err := NewApplier(d, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Apply(&r0) {
		t.Fatal("record 0 dropped")
	}
	var texts []string
	for i, it := range r0.Rubric {
		if it.ID != int32(i+1) {
			t.Fatalf("item %d has id %d", i, it.ID)
		}
		texts = append(texts, it.Text)
	}
	if len(r0.Rubric) != 4 || strings.Contains(strings.Join(texts, "|"), item(recs[0], 2)) {
		t.Fatalf("rubric after the reject: %q", texts)
	}
	ed := r0.Rubric[2] // was item 4
	if ed.Text != "Shows both counts agree." || ed.Weight != 2 || ed.SatRate != nil || ed.Valid == nil || !*ed.Valid {
		t.Fatalf("the edited item: %+v", ed)
	}
	for _, ro := range r0.Rollouts {
		var ids []int32
		for _, s := range ro.Satisfaction {
			ids = append(ids, s.ID)
		}
		if len(ids) != 3 || ids[0] != 1 || ids[1] != 2 || ids[2] != 4 { // items 1, 3, 5 kept their verdicts, now 1, 2, 4
			t.Fatalf("rollout %d verdicts for items %v; want 1 2 4", ro.Index, ids)
		}
	}
	if a.Apply(&r1) {
		t.Fatal("record 1 kept without its ANSWER item")
	}
	untouched := recs[0]
	untouched.ID, untouched.Style, untouched.Rubric = "grounded-1", "grounded", nil
	if !a.Apply(&untouched) {
		t.Fatal("a record no decision names was dropped")
	}
	s := a.Summary()
	if s.ItemsRejected != 2 || s.ItemsEdited != 1 || s.ItemsAccepted != 0 || s.Stale != 1 || s.RecordsDropped != 1 || s.Policy != "none" ||
		len(s.Reviewers) != 1 || s.Reviewers[0].Rejected != 2 {
		t.Fatalf("summary %+v", s)
	}
}

// TestReportAgreement: coverage and the kappa of a reviewer against the
// judge and between reviewers, from the demo corpus.
func TestReportAgreement(t *testing.T) {
	c := loadDemo(t, 4)
	// The judge says item 3 of r00 and r02 is invalid, the rest valid.
	// alice agrees everywhere; bob accepts everything.
	var ae, be []Entry
	for _, r := range []string{"r00", "r01", "r02", "r03"} {
		for item := int32(1); item <= 5; item++ {
			act := ActionAccept
			if item == 3 && (r == "r00" || r == "r02") {
				act = ActionReject
			}
			ae = append(ae, decide("alice", act, t0, r, item))
			be = append(be, decide("bob", ActionAccept, t0, r, item))
		}
	}
	rep := Summarize(c, decisions(stateOfEntries("alice", ae...), stateOfEntries("bob", be[:10]...)))
	if rep.Items != 20 || rep.Covered != 20 || rep.Reviewers[1].Decided != 10 {
		t.Fatalf("coverage %+v", rep)
	}
	if k := rep.VsJudge[0].Kappa; k == nil || *k != 1 {
		t.Fatalf("alice vs the judge: kappa %v, want 1", k)
	}
	// bob on r00, r01: 9 agree of 10, and he never says invalid: kappa 0.
	if a := rep.Between[0]; a.Items != 10 || a.Agree != 9 || a.Kappa == nil || *a.Kappa != 0 {
		t.Fatalf("alice vs bob: %+v", a)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "report.txt"), []byte(text.String()))
}

// TestQueuePutsLikelyWrongFirst: records whose items the judge and the
// empirical figures disagree on come first; filters narrow the queue.
func TestQueuePutsLikelyWrongFirst(t *testing.T) {
	c := loadDemo(t, 6)
	none := Replay("x", nil)
	ids := func(rs []*Record) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.ID)
		}
		return strings.Join(s, " ")
	}
	// r03: judge valid, empirically invalid (disagree, empirical, low edge);
	// r00: judge invalid and empirically valid; r02, r04: judge invalid and
	// empirically invalid; r01, r05: nothing to look at.
	if got := ids(Queue(c, Filter{}, none)); got != "r03 r00 r02 r04 r01 r05" {
		t.Errorf("queue %s", got)
	}
	if got := ids(Queue(c, Filter{JudgeInvalid: true}, none)); got != "r00 r02 r04" {
		t.Errorf("judge-invalid queue %s", got)
	}
	if got := ids(Queue(c, Filter{LowEdge: true, EmpiricalInvalid: true}, none)); got != "r03 r02 r04" {
		t.Errorf("low-edge, empirically invalid queue %s", got)
	}
	s := stateOfEntries("x", decide("x", ActionAccept, t0, "r01", 1), decide("x", ActionSkip, t0, "r03", 0))
	if got := ids(Queue(c, Filter{}, s)); got != "r00 r02 r04 r01 r05 r03" {
		t.Errorf("queue after skipping r03: %s", got)
	}
	if r, n := Progress(c, s); r != 1 || n != 30 {
		t.Errorf("progress %d of %d", r, n)
	}
}

// loadDemo loads a demo-like run of n records for review.
func loadDemo(t *testing.T, n int) *Corpus {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, n); err != nil {
		t.Fatal(err)
	}
	in, err := audit.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
