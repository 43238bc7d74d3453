package corpus

import (
	"context"
	"fmt"
	"os"
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
	t.Parallel()
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

// TestExportBothRoles: --role reasoner,rubricator writes both roles' rows
// into one export: each math record's reasoner row, then its rubricator row
// when it has a stored rollout; a grounded record's questions (a passage
// with two questions included) get reasoner rows only. No record is
// dropped for want of a rollout: the record still has its reasoner row, and
// export.json counts records and rows apart (rows per role, records
// without a rubricator row), so records_out is never read as rows.
func TestExportBothRoles(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	fixture := append(exportFixture(), groundedFixture()...)
	writeExportCorpus(t, run, fixture, 3)
	both := RoleReasoner + "," + RoleRubricator
	out := filepath.Join(t.TempDir(), "both")
	m, err := Export(context.Background(), run, quietRoles(FormatVerl, out, both))
	if err != nil {
		t.Fatal(err)
	}
	var wantRubricator, noRollout, questions int64
	for _, r := range fixture {
		switch {
		case r.Grounded != nil:
			questions += int64(len(r.Grounded.Questions))
			noRollout++
		case len(r.Rollouts) > 0:
			wantRubricator++
		default:
			noRollout++
		}
	}
	reasoner := int64(len(fixture)) - int64(len(groundedFixture())) + questions
	if m.Role != both || m.RecordsOut != int64(len(fixture)) || m.RecordsDropped != 0 {
		t.Errorf("export.json role %q, records out %d, dropped %d; want %q, %d, 0", m.Role, m.RecordsOut, m.RecordsDropped, both, len(fixture))
	}
	if m.RowsByRole[RoleReasoner] != reasoner || m.RowsByRole[RoleRubricator] != wantRubricator || m.RecordsWithoutRubricatorRow != noRollout {
		t.Errorf("rows by role %v, records without a rubricator row %d; want reasoner %d, rubricator %d, %d",
			m.RowsByRole, m.RecordsWithoutRubricatorRow, reasoner, wantRubricator, noRollout)
	}
	var splitRows int64
	for _, c := range m.Splits {
		splitRows += c.Rows
	}
	if splitRows != reasoner+wantRubricator {
		t.Errorf("splits hold %d rows; want %d", splitRows, reasoner+wantRubricator)
	}
	seen := map[string][]string{} // record id -> abilities in row order
	index := map[string]int64{}
	for _, row := range verlRows(t, out, m) {
		if row.ExtraInfo.Index != index[row.ExtraInfo.Split] {
			t.Errorf("row %s of %s has index %d; want %d (rows numbered within their split)", row.ExtraInfo.ID, row.ExtraInfo.Split, row.ExtraInfo.Index, index[row.ExtraInfo.Split])
		}
		index[row.ExtraInfo.Split]++
		seen[row.ExtraInfo.ID] = append(seen[row.ExtraInfo.ID], row.Ability)
		user := row.Prompt[len(row.Prompt)-1].Content
		if isRub := strings.Contains(user, `"current_score"`); isRub != (row.Ability == RoleRubricator) {
			t.Errorf("row %s: ability %q with a prompt that is the rubricator's: %v", row.ExtraInfo.ID, row.Ability, isRub)
		}
	}
	for _, r := range fixture {
		if r.Grounded != nil {
			for k := range r.Grounded.Questions {
				if got := seen[schema.QuestionID(r.ID, int32(k))]; len(got) != 1 || got[0] != verlAbilityGrounded {
					t.Errorf("question %d of %s: rows %v; want one grounded reasoner row", k, r.ID, got)
				}
			}
			continue
		}
		want := []string{verlAbility}
		if len(r.Rollouts) > 0 {
			want = append(want, RoleRubricator)
		}
		if got := seen[r.ID]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("record %s: rows %v; want %v", r.ID, got, want)
		}
	}

	// One role alone is as before, and a grounded passage of two questions
	// no longer stops a rubricator export: it has no rubricator row.
	rub := filepath.Join(t.TempDir(), "rub")
	if m, err = Export(context.Background(), run, quietRoles(FormatVerl, rub, RoleRubricator)); err != nil {
		t.Fatal(err)
	}
	if m.RowsByRole[RoleRubricator] != wantRubricator || m.RecordsOut != wantRubricator || m.RecordsDropped != noRollout {
		t.Errorf("rubricator alone: rows by role %v, records out %d, dropped %d; want %d, %d, %d", m.RowsByRole, m.RecordsOut, m.RecordsDropped, wantRubricator, wantRubricator, noRollout)
	}
	for _, row := range verlRows(t, rub, m) {
		if row.Ability != RoleRubricator {
			t.Errorf("rubricator export: row %s has ability %q", row.ExtraInfo.ID, row.Ability)
		}
	}
	for _, bad := range []string{"reasoner,reasoner", "reasoner,", "both,rubricator"} {
		if err := (&ExportOptions{Format: FormatVerl, Out: "x", Role: bad}).Check(); err == nil {
			t.Errorf("--role %q accepted", bad)
		}
	}
	if err := (&ExportOptions{Format: FormatRaR, Out: "x", Role: both}).Check(); err == nil || !strings.Contains(err.Error(), "verl") {
		t.Errorf("--format rar --role %s: %v; want an error naming verl", both, err)
	}
}

func quietRoles(format, out, role string) ExportOptions {
	opt := quietExportOptions(format, out)
	opt.Role = role
	return opt
}

// TestExportBothRolesCard: the card says how it was made (--role) and
// counts rows per role apart from records.
func TestExportBothRolesCard(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	writeExportCorpus(t, run, exportFixture(), 3)
	out := filepath.Join(t.TempDir(), "both")
	m, err := Export(context.Background(), run, quietRoles(FormatVerl, out, RoleReasoner+","+RoleRubricator))
	if err != nil {
		t.Fatal(err)
	}
	card, err := os.ReadFile(filepath.Join(out, DatasetCardName))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Rows by role (RLCER's reasoner and rubricator; the `ability` column tells them apart): %d reasoner, %d rubricator.",
		m.RowsByRole[RoleReasoner], m.RowsByRole[RoleRubricator])
	for _, s := range []string{want, "--role reasoner,rubricator", fmt.Sprintf("%d records have a reasoner row only", m.RecordsWithoutRubricatorRow)} {
		if !strings.Contains(string(card), s) {
			t.Errorf("the card lacks %q:\n%s", s, card)
		}
	}
}
