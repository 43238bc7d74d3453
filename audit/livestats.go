package audit

import (
	"fmt"
	"io"
	"strings"

	"github.com/rubricforge/rubricforge/corpus"
)

// liveStatsOf reads what distill refine --from-stats wrote into a run
// directory; nil for any other corpus.
func liveStatsOf(in *Input) (*corpus.FromStats, error) {
	if in.Kind != KindRun || len(in.Paths) != 1 {
		return nil, nil
	}
	return corpus.ReadFromStats(in.Paths[0])
}

// textLiveStats writes the live statistics folded into the corpus.
func (r *Report) textLiveStats(w io.Writer) {
	s := r.LiveStats
	if s == nil {
		return
	}
	heading(w, "Refined from a training run's live statistics (distill refine --from-stats)")
	fmt.Fprintln(w, clip(fmt.Sprintf("  state dir:        %s (replicas %s)", s.StateDir, strings.Join(s.Replicas, ", "))))
	fmt.Fprintln(w, clip(fmt.Sprintf("  source:           %s", s.Source)))
	fmt.Fprintf(w, "  records:          %d read, %d with live statistics of their rubric (%d groups), %d changed\n", s.Records, s.Matched, s.Groups, s.Changed)
	fmt.Fprintf(w, "  not changed:      %d never scored, %d scored with another rubric, %d kept by two replicas\n", s.NotInStats, s.RubricDiffers, s.Split)
	fmt.Fprintf(w, "  items:            %d retired and dropped, %d retired and kept (ANSWER, style rules), %d elicited and added, %d elicited not added (no such type in the style)\n",
		s.Retired, s.RetiredKept, s.Admitted, s.AdmittedSkipped)
	if s.VerdictsCleared > 0 {
		fmt.Fprintf(w, "  verdicts:         cleared on the stored rollouts of the %d records that gained criteria; run the empirical stage to measure them\n", s.VerdictsCleared)
	}
}
