package pipeline

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/source"
)

// A run keeps, in report.json, a sample of what it rejected: the first
// problems (passages) left out, with their reason and, for a problem the
// selection left out, what its rollouts answered and how they ended, so
// that a run whose corpus stays empty shows why without a look into its
// cache (distill status prints the sample of an empty corpus).

// Rejected is one problem or passage left out, as report.json keeps it.
type Rejected struct {
	ID     string `json:"id"`
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
	Answer string `json:"answer,omitempty"` // the ground truth (math styles)
	// Rollouts are the first few of its rollouts: what was extracted, how
	// the rollout ended and its last characters.
	Rollouts []RejectedRollout `json:"rollouts,omitempty"`
}

// RejectedRollout is one rollout of a rejected problem.
type RejectedRollout struct {
	Index        int32  `json:"index"`
	Extracted    string `json:"extracted_answer"`
	Correct      bool   `json:"correct"`
	FinishReason string `json:"finish_reason"`
	Tail         string `json:"tail"` // its last tailChars characters
}

const (
	maxRejected         = 5   // problems kept
	maxRejectedRollouts = 3   // rollouts kept of each
	tailChars           = 300 // characters of a rollout's end
)

// rejectedOf is the sample entry of a problem left out at stage.
func rejectedOf(p source.Problem, stage, reason string, rollouts []schema.Rollout) *Rejected {
	r := &Rejected{ID: p.ID, Stage: stage, Reason: reason, Answer: p.Answer}
	for _, ro := range rollouts[:min(len(rollouts), maxRejectedRollouts)] {
		r.Rollouts = append(r.Rollouts, RejectedRollout{Index: ro.Index, Extracted: ro.ExtractedAnswer, Correct: ro.Correct,
			FinishReason: ro.FinishReason, Tail: tail(ro.Text, tailChars)})
	}
	return r
}

// tail is the last n characters of s, from a character boundary.
func tail(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := len(s)
	for ; n > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return "..." + s[i:]
}

// EmptyReason says why a finished run's corpus is empty, naming what
// happened to its units; "" when the corpus holds a record, or the run did
// not finish (a stopped run says why it stopped).
func (r *Report) EmptyReason() string {
	p := r.Problems
	if r.Status != StatusFinished || p.Done > 0 || r.CorpusRows > 0 {
		return ""
	}
	units := job.UnitWordsOf(r.styleName()).Units
	switch {
	case p.Unique == 0 && p.BadLines > 0:
		return fmt.Sprintf("the corpus is empty: none of the input's rows was usable (%d bad lines; the log and report.json name them)", p.BadLines)
	case p.Unique == 0:
		return "the corpus is empty: the input holds no " + units
	}
	var why []string
	if p.LeftOut > 0 {
		why = append(why, fmt.Sprintf("%s left out by %s", countOf(p.LeftOut, p.Unique, units), r.leftOutStages()))
	}
	if p.Failed > 0 {
		why = append(why, fmt.Sprintf("%s failed (%s)", countOf(p.Failed, p.Unique, units), r.failedStages()))
	}
	s := "the corpus is empty: " + strings.Join(why, "; ")
	if r.LeftOutByStage[job.StageSelect] > 0 && r.Sampled.Total > 0 {
		switch {
		case r.Sampled.Correct == 0:
			s += fmt.Sprintf("; no rollout was correct (0 of %d): check the answer field (--field-answer) and the model", r.Sampled.Total)
		case r.Sampled.Correct == r.Sampled.Total:
			s += fmt.Sprintf("; every rollout was correct (%d): the problems are too easy for the model to have flawed rollouts", r.Sampled.Total)
		}
	}
	if len(r.Rejected) > 0 {
		s += "; distill status shows the first rejected and their rollouts' tails"
	}
	return s
}

// countOf is "all 4 problems" or "3 of 4 problems".
func countOf(n, of int64, units string) string {
	if n == of {
		return fmt.Sprintf("all %d %s were", n, units)
	}
	return fmt.Sprintf("%d of %d %s were", n, of, units)
}

// leftOutStages names what left units out: "selection", "passage=2 quality=1".
func (r *Report) leftOutStages() string {
	if len(r.LeftOutByStage) == 1 && r.LeftOutByStage[job.StageSelect] > 0 {
		return "selection"
	}
	if len(r.LeftOutByStage) == 0 {
		return job.UnitWordsOf(r.styleName()).LeftOutBy
	}
	return "stage: " + r.leftOutByStage()
}

// failedStages is "distill=3 judge=1".
func (r *Report) failedStages() string {
	var parts []string
	for _, k := range sortedKeys(r.FailuresByStage) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, r.FailuresByStage[k]))
	}
	return strings.Join(parts, " ")
}

func (r *Report) styleName() string {
	if r.Grounded != nil {
		return schema.StyleGrounded
	}
	return r.Style
}

// writeRejected prints the sample of what was rejected.
func (r *Report) writeRejected(w io.Writer) {
	if len(r.Rejected) == 0 {
		return
	}
	fmt.Fprintf(w, "rejected, the first %d (report.json rejected_sample):\n", len(r.Rejected))
	for _, x := range r.Rejected {
		fmt.Fprintf(w, "  %s (%s): %s\n", x.ID, x.Stage, x.Reason)
		if x.Answer != "" && len(x.Rollouts) > 0 {
			fmt.Fprintf(w, "    ground truth %q\n", clipText(x.Answer, 80))
		}
		for _, ro := range x.Rollouts {
			fmt.Fprintf(w, "    rollout %d: extracted %q, correct %v, finish %s; ends: %q\n", ro.Index, clipText(ro.Extracted, 80), ro.Correct, ro.FinishReason, ro.Tail)
		}
	}
}

// clipText cuts s to n characters, marking the cut.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "..."
}
