package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/schema"
)

// TestRefineFromStatsCommand: distill refine --from-stats writes the new
// corpus and says what changed; it refuses the flags of the other
// refinement with it, --skip-split without it, and a directory that is not
// a state directory.
func TestRefineFromStatsCommand(t *testing.T) {
	t.Parallel()
	src := smallCorpus(t, true)
	tmp := t.TempDir()
	state := filepath.Join(tmp, "state")
	set := livestate.DefaultSettings()
	set.Window, set.MinRollouts, set.Saturation, set.RetireSaturated, set.AdmitGroups = 2, 2, 0.9, true, 1
	st, err := livestate.Open(state, livestate.Options{Settings: set})
	if err != nil {
		t.Fatal(err)
	}
	var rec *schema.Record
	for _, r := range runtest.ReadCorpus(t, src) {
		if r.Grounded == nil && (rec == nil || r.ID < rec.ID) {
			rec = r
		}
	}
	lab := schema.LabelOf(rec)
	v, _ := st.Begin(&lab)
	for h := range 2 {
		g := livestate.Group{Problem: rec.ID, Version: v.Version, Hash: uint64(h + 1), N: 2, Correct: 1}
		for k, it := range v.Judged {
			sat := 1
			if k == 0 {
				sat = 2
			}
			g.Items = append(g.Items, [3]int{int(it.ID), sat, 1})
		}
		if err := st.Record(g); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	var stdout, stderr bytes.Buffer
	out := filepath.Join(tmp, "v2")
	if code := run([]string{"refine", src, "--from-stats", state, "--out", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "1 changed") || !strings.Contains(stdout.String(), "1 retired and dropped") {
		t.Errorf("output:\n%s", stdout.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{src, "--from-stats", state, "--out", filepath.Join(tmp, "a"), "--decompose"}, "--decompose"},
		{[]string{src, "--skip-split", "--out", filepath.Join(tmp, "b")}, "--skip-split applies only to --from-stats"},
		{[]string{src, "--from-stats", tmp, "--out", filepath.Join(tmp, "c")}, "holds no state log"},
	} {
		stderr.Reset()
		if code := run(append([]string{"refine"}, tc.args...), &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
