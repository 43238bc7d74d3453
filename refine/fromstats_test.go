package refine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/schema"
)

// liveRun is a state directory of a training run over src's records: the
// first record's first item and ANSWER item saturate and retire, and an
// elicited criterion is admitted; the second record saturates nothing; the
// third was scored with another rubric (a changed label); the others were
// never scored.
func liveRun(t *testing.T, recs []*schema.Record, dir string) {
	t.Helper()
	set := livestate.DefaultSettings()
	set.Window, set.MinRollouts, set.Saturation, set.Reinstate, set.RetireSaturated, set.AdmitGroups = 2, 4, 0.9, 0.5, true, 1
	st, err := livestate.Open(dir, livestate.Options{Settings: set, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	group := func(rec *schema.Record, lab schema.Label, hash uint64, saturate bool) {
		v, err := st.Begin(&lab)
		if err != nil {
			t.Fatal(err)
		}
		g := livestate.Group{Problem: rec.ID, Version: v.Version, Hash: hash, Scheme: "srar", N: 4, Correct: 2}
		for k, it := range v.Judged {
			sat := 2
			if saturate && (k == 0 || it.Type == schema.TypeAnswer) {
				sat = 4
			}
			g.Items = append(g.Items, [3]int{int(it.ID), sat, min(sat, 2)})
		}
		if err := st.Record(g); err != nil {
			t.Fatal(err)
		}
	}
	first := schema.LabelOf(recs[0])
	group(recs[0], first, 1, true)
	group(recs[0], first, 2, true)
	c := livestate.Candidate{Item: schema.Item{Type: schema.TypeProcess, Text: "Checks the result against the conditions", Weight: 2}, Evidence: livestate.Evidence{Reason: "sound"}}
	if err := st.AddCandidates(recs[0].ID, []livestate.Candidate{c}, nil, 0); err != nil {
		t.Fatal(err)
	}
	group(recs[0], first, 3, true)
	group(recs[1], schema.LabelOf(recs[1]), 4, false)
	other := schema.LabelOf(recs[2])
	other.Rubric = slices.Clone(other.Rubric)
	other.Rubric[0].Text += " (edited)"
	group(recs[2], other, 5, true)
}

// liveCorpus writes a corpus of six srar records into dir/src and a
// training run's state directory over it into dir/state (liveRun), and
// returns both and the records in id order.
func liveCorpus(t *testing.T, dir string) (src, state string, recs []*schema.Record) {
	t.Helper()
	src, state = filepath.Join(dir, "src"), filepath.Join(dir, "state")
	if err := synthcorpus.Write(src, synthcorpus.Options{Records: 6, Seed: 3, Style: schema.StyleSRaR, Items: 6}, nil); err != nil {
		t.Fatal(err)
	}
	byID := runtest.ReadCorpus(t, src)
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		recs = append(recs, byID[id])
	}
	liveRun(t, recs, state)
	return src, state, recs
}

// TestRefineFromStats: distill refine --from-stats drops the items the run
// retired (an ANSWER item stays), adds the criteria it admitted (a PROCESS
// criterion as a SUGGEST item in an srar rubric), renumbers the items,
// leaves the records it has no statistics of, or whose rubric it did not
// score, as they were, says so in from-stats.json and per record, and
// validate reports it.
func TestRefineFromStats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, state, recs := liveCorpus(t, dir)
	out := filepath.Join(dir, "out")

	sum, err := FromStats(context.Background(), StatsConfig{Src: src, Out: out, StatsDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != 6 || sum.Matched != 2 || sum.Changed != 1 || sum.NotInStats != 3 || sum.RubricDiffers != 1 ||
		sum.Retired != 1 || sum.RetiredKept != 1 || sum.Admitted != 1 || sum.VerdictsCleared != 1 || !slices.Equal(sum.Replicas, []string{"r1"}) {
		t.Errorf("summary %+v", sum)
	}
	refined := runtest.ReadCorpus(t, out)
	r0, src0 := refined[recs[0].ID], recs[0]
	if len(r0.Rubric) != len(src0.Rubric) || r0.Rubric[len(r0.Rubric)-1].Text != "Checks the result against the conditions" || r0.Rubric[len(r0.Rubric)-1].Type != schema.TypeSuggest {
		t.Errorf("record 0's rubric %+v: want the first item dropped and the admitted criterion added as a SUGGEST", r0.Rubric)
	}
	if r0.Rubric[0].Text != src0.Rubric[1].Text {
		t.Errorf("record 0's first item %q, want the source's second, %q", r0.Rubric[0].Text, src0.Rubric[1].Text)
	}
	if v := schema.RubricViolations(r0.Style, r0.Rubric, 0); v != nil {
		t.Errorf("record 0's rubric breaks the rules: %v", v)
	}
	for i, it := range r0.Rubric {
		if it.ID != int32(i+1) {
			t.Errorf("record 0's item %d has id %d", i, it.ID)
		}
	}
	for _, ro := range r0.Rollouts {
		if len(ro.Satisfaction) != 0 {
			t.Errorf("record 0 gained a criterion its stored verdicts do not cover, yet kept them: %+v", ro.Satisfaction)
			break
		}
	}
	for _, b := range recs[1:] {
		if a := refined[b.ID]; len(a.Rubric) != len(b.Rubric) || a.Rubric[0].Text != b.Rubric[0].Text || len(a.Rollouts[0].Satisfaction) != len(b.Rollouts[0].Satisfaction) {
			t.Errorf("record %s changed: %+v", b.ID, a.Rubric)
		}
	}
	m, err := corpus.ReadManifest(out)
	if err != nil || m.JobFingerprint != sum.Fingerprint || refined[recs[1].ID].Provenance.JobFingerprint != sum.Fingerprint {
		t.Errorf("manifest %+v, %v: want the refinement's fingerprint %s on it and on every record", m, err, sum.Fingerprint)
	}

	in, err := audit.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Audit(context.Background(), in, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LiveStats == nil || rep.LiveStats.Admitted != 1 || rep.LiveStats.Retired != 1 {
		t.Fatalf("validate's report of the refined corpus: live stats %+v", rep.LiveStats)
	}
	var text strings.Builder
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "live statistics") || !strings.Contains(text.String(), state) {
		t.Errorf("validate's text does not say the corpus was refined from live statistics:\n%s", text.String())
	}

	// A state directory holding two replicas' logs of one problem (two
	// rewardd with their own state directories, their logs gathered) is
	// refused, naming it, unless told to skip it.
	two := filepath.Join(dir, "two")
	for _, r := range []string{"a", "b"} {
		own := filepath.Join(dir, "alone-"+r)
		st, err := livestate.Open(own, livestate.Options{Settings: livestate.DefaultSettings(), Replica: r})
		if err != nil {
			t.Fatal(err)
		}
		lab := schema.LabelOf(recs[0])
		if _, err := st.Begin(&lab); err != nil {
			t.Fatal(err)
		}
		st.Close()
		raw, err := os.ReadFile(filepath.Join(own, r+".log"))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(two, 0o755)
		if err := os.WriteFile(filepath.Join(two, r+".log"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = FromStats(context.Background(), StatsConfig{Src: src, Out: filepath.Join(dir, "out2"), StatsDir: two})
	if err == nil || !strings.Contains(err.Error(), recs[0].ID) || !strings.Contains(err.Error(), "--skip-split") {
		t.Errorf("a split problem: %v, want a refusal naming it and --skip-split", err)
	}
	sum2, err := FromStats(context.Background(), StatsConfig{Src: src, Out: filepath.Join(dir, "out3"), StatsDir: two, SkipSplit: true})
	if err != nil || sum2.Split != 1 || sum2.Changed != 0 {
		t.Errorf("skipping the split problem: %+v, %v", sum2, err)
	}
}
