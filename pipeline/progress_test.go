package pipeline

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgressLineCostOnlyWhenCounted: a job without prices has no cost to
// show; the progress line says so instead of "$0.0000", in both the plain
// line and the terminal bar.
func TestProgressLineCostOnlyWhenCounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		counted bool
		want    string
		not     string
	}{
		{true, "$0.0123", "not counted"},
		{false, "cost not counted", "$"},
	} {
		s := statusLine{done: 3, total: 10, requests: 40, cost: 0.0123, costCounted: tc.counted}
		for _, terminal := range []bool{false, true} {
			var b bytes.Buffer
			p := newProgress(&b, terminal, 0)
			p.update(s)
			p.finish()
			if out := b.String(); !strings.Contains(out, tc.want) || strings.Contains(out, tc.not) {
				t.Errorf("counted %v, terminal %v: %q; want %q and not %q", tc.counted, terminal, out, tc.want, tc.not)
			}
		}
	}
}
