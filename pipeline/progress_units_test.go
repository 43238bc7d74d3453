package pipeline

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/schema"
)

// TestStatusLineNamesItsUnits: a grounded run's status line counts
// passages a minute, not problems (issue 43, item 10: math words in
// grounded output); a math run's still counts problems.
func TestStatusLineNamesItsUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ style, want, not string }{
		{schema.StyleGrounded, "12.5 passages/min", "problems/min"},
		{"", "12.5 problems/min", "passages/min"},
	} {
		s := statusLine{done: 3, total: 10, perMin: 12.5, units: job.UnitWordsOf(tc.style).Units}
		if line := s.String(); !strings.Contains(line, tc.want) || strings.Contains(line, tc.not) {
			t.Errorf("style %q: status line %q, want %q", tc.style, line, tc.want)
		}
	}
}
