package corpus

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestExportRoles: --role rubricator writes RLCER's rubricator prompt over
// each problem and its first flawed stored rollout, ability "rubricator",
// with the same label and extra_info as the reasoner's rows; --hints
// appends the rubric's criteria to the reasoner's prompt, without the items
// that state a result; export.json names both.
func TestExportRoles(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	fixture := exportFixture()
	writeExportCorpus(t, run, fixture, 3)
	recs := map[string]*schema.Record{}
	for i := range fixture {
		if len(fixture[i].Rollouts) > 0 {
			recs[fixture[i].ID] = &fixture[i]
		}
	}
	rub := filepath.Join(t.TempDir(), "rub")
	m, err := Export(context.Background(), run, ExportOptions{Format: FormatVerl, Out: rub, Role: RoleRubricator})
	if err != nil {
		t.Fatal(err)
	}
	noRollouts := int64(0)
	for _, r := range fixture {
		if r.Grounded == nil && len(r.Rollouts) == 0 {
			noRollouts++
		}
	}
	if m.Role != RoleRubricator || m.RecordsDropped != noRollouts || noRollouts == 0 {
		t.Errorf("export.json role %q, records dropped %d; want rubricator and the %d records without a stored rollout", m.Role, m.RecordsDropped, noRollouts)
	}
	rows := verlRows(t, rub, m)
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	for _, row := range rows {
		rec := recs[row.ExtraInfo.ID]
		if rec == nil || rec.Grounded != nil {
			continue
		}
		user := row.Prompt[len(row.Prompt)-1].Content
		want := rec.Rollouts[0].Text
		for _, ro := range rec.Rollouts {
			if !ro.Correct {
				want = ro.Text
				break
			}
		}
		if row.Ability != RoleRubricator || !strings.Contains(user, `"current_score"`) || !strings.Contains(user, "<response>\n"+want+"\n</response>") || !strings.Contains(user, rec.Problem) {
			t.Errorf("row %s: ability %q, prompt %q", row.ExtraInfo.ID, row.Ability, user)
		}
		if row.ExtraInfo.Rubric == "" || !strings.Contains(row.Label, rec.ID) {
			t.Errorf("row %s: the rubricator's row lost its extra_info or label", row.ExtraInfo.ID)
		}
	}

	hinted := filepath.Join(t.TempDir(), "hints")
	if m, err = Export(context.Background(), run, ExportOptions{Format: FormatVerl, Out: hinted, Hints: true}); err != nil || !m.Hints {
		t.Fatalf("hints: %v, %+v", err, m)
	}
	for _, row := range verlRows(t, hinted, m) {
		rec := recs[row.ExtraInfo.ID]
		if rec == nil || rec.Grounded != nil {
			continue
		}
		user := row.Prompt[len(row.Prompt)-1].Content
		for _, it := range rec.Rubric {
			has := strings.Contains(user, strings.Join(strings.Fields(it.Text), " "))
			if states := it.Type == schema.TypeAnswer || it.Type == schema.TypeFactual; has == states {
				t.Errorf("row %s: item %d (%s) in the hints: %v", row.ExtraInfo.ID, it.ID, it.Type, has)
			}
		}
	}
	for _, bad := range []ExportOptions{{Format: FormatRaR, Out: "x", Role: RoleRubricator}, {Format: FormatVerl, Out: "x", Role: RoleRubricator, Hints: true}, {Format: FormatVerl, Out: "x", Role: "judge"}} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func verlRows(t *testing.T, dir string, m *ExportManifest) []VerlRow {
	t.Helper()
	var out []VerlRow
	for _, rows := range readRows[VerlRow](t, dir, m) {
		out = append(out, rows...)
	}
	return out
}
