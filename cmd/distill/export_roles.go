package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rubricforge/rubricforge/corpus"
)

// rolesNote names the roles of an export with --role in its summary's
// first line: ", roles reasoner,rubricator" (none for the reasoner's plain
// rows).
func rolesNote(m *corpus.ExportManifest) string {
	switch {
	case m.Role == "":
		return ""
	case strings.Contains(m.Role, ","):
		return ", roles " + m.Role
	}
	return ", role " + m.Role
}

// writeExportRoles counts an export's rows per role, apart from its
// records: a record makes a row of each role it can.
func writeExportRoles(w io.Writer, m *corpus.ExportManifest) {
	if m.RowsByRole == nil {
		return
	}
	var parts []string
	for _, r := range corpus.ExportRoles {
		if n, ok := m.RowsByRole[r]; ok || strings.Contains(m.Role, r) {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	fmt.Fprintf(w, "  rows: %s", strings.Join(parts, ", "))
	if n := m.RecordsWithoutRubricatorRow; n > 0 {
		fmt.Fprintf(w, " (%d records without a rubricator row: no stored rollout, or a grounded passage)", n)
	}
	fmt.Fprintln(w)
}
