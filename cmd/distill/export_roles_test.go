package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// TestExportSummaryRoles: an export of both roles says how many rows of
// each role it wrote, apart from the records, and how many records have no
// rubricator row; the help names the list form of --role.
func TestExportSummaryRoles(t *testing.T) {
	t.Parallel()
	m := &corpus.ExportManifest{
		Format: corpus.FormatVerl, Role: "reasoner,rubricator", RecordsIn: 12, RecordsOut: 12,
		RowsByRole:                  map[string]int64{corpus.RoleReasoner: 12, corpus.RoleRubricator: 10},
		RecordsWithoutRubricatorRow: 2,
		Splits:                      map[string]corpus.SplitCounts{"train": {Rows: 22, Files: 1}},
	}
	var b bytes.Buffer
	writeExportSummary(&b, "exports/both", m)
	want := "export: exports/both (verl, roles reasoner,rubricator), 12 records in, 12 out\n" +
		"  rows: 12 reasoner, 10 rubricator (2 records without a rubricator row: no stored rollout, or a grounded passage)\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("summary:\n%s\nwant it to begin with:\n%s", b.String(), want)
	}
	var help bytes.Buffer
	exportCmd([]string{"-h"}, &help, &help)
	if !strings.Contains(help.String(), "--role reasoner,rubricator") {
		t.Errorf("export -h does not show --role reasoner,rubricator:\n%s", help.String())
	}
}
