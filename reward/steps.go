package reward

import (
	"strings"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/verify"
)

// StepSpan is one "### Step N:" step of a response: from the start of its
// header line to the start of the next header, or to the end of the
// response. Step is the header's position, 1 for the first header, whatever
// number the header shows (models number from 0, skip numbers and start
// over): the satisfaction judge is shown each step inside a tag with this
// number and names steps by it (prompts.Set.SatisfyMessages). Char offsets count
// Unicode code points (Python str indices, for a tokenizer's offset
// mapping); byte offsets count UTF-8 bytes. Ends are exclusive.
type StepSpan struct {
	Step      int32 `json:"step"`
	CharStart int   `json:"char_start"`
	CharEnd   int   `json:"char_end"`
	ByteStart int   `json:"byte_start"`
	ByteEnd   int   `json:"byte_end"`
}

// Steps finds the step spans of a response. A header is a line that starts,
// after spaces or tabs, with two to four '#', optional spaces, "Step", at
// least one space, a number, optional spaces and ':' (schema.IsStepHeader,
// the rollout template's "### Step N:"). Text before the first header
// belongs to no step; a response without headers has none.
func Steps(response string) []StepSpan {
	var store [8]StepSpan // most responses have fewer steps; the result is a copy of the right size
	spans := AppendSteps(store[:0], response)
	if len(spans) == 0 {
		return nil
	}
	out := make([]StepSpan, len(spans))
	copy(out, spans)
	return out
}

// AppendSteps appends the step spans of response to dst.
func AppendSteps(dst []StepSpan, response string) []StepSpan {
	first := len(dst)
	chars, counted := 0, 0 // code points up to byte offset counted
	for off := 0; off < len(response); {
		end := strings.IndexByte(response[off:], '\n')
		next := len(response)
		if end >= 0 {
			next = off + end + 1
		}
		if schema.IsStepHeader(response[off:next]) {
			chars += utf8.RuneCountInString(response[counted:off])
			counted = off
			if k := len(dst); k > first {
				dst[k-1].ByteEnd, dst[k-1].CharEnd = off, chars
			}
			dst = append(dst, StepSpan{Step: int32(len(dst) - first + 1), ByteStart: off, CharStart: chars})
		}
		off = next
	}
	if k := len(dst); k > first {
		dst[k-1].ByteEnd = len(response)
		dst[k-1].CharEnd = chars + utf8.RuneCountInString(response[counted:])
	}
	return dst
}

// FormatOK is the format reward r_fmt of seed 000 (eq. 6): the response has
// step headers and a final answer in the form the prompts ask for, an
// <answer>...</answer> tag (our rollout template) or a \boxed{} (the paper's
// training prompt).
func FormatOK(response string, steps []StepSpan) bool {
	if len(steps) == 0 {
		return false
	}
	open := strings.Index(response, "<answer>")
	return (open >= 0 && strings.Contains(response[open:], "</answer>")) || strings.Contains(response, `\boxed`)
}

// Rollout is one response prepared for scoring: what the pure formulas need
// besides the rubric and the judge's verdicts.
type Rollout struct {
	Response  string
	Steps     []StepSpan
	Extracted string // the final answer verify.ExtractWith found; "" when none
	Correct   bool   // verify.Equal of Extracted against the ground truth
	FormatOK  bool
	// CutOff says why no answer was taken from the response when its
	// finish reason says it was cut off ("finish_reason length"); "" when
	// the finish reason does not say so or is unknown.
	CutOff string
	// Empty: the response says nothing (Silent: white space, markup and
	// punctuation only). It is not to be judged, and is paid the floor
	// (compute), whatever the policy.
	Empty bool
	// Verdicts are the judge's, one per rubric item in rubric order; nil
	// when the judge failed (JudgeErr says why).
	Verdicts []schema.Satisfaction
	JudgeErr string
}

// Analyze is AnalyzeFinished without a finish reason.
func Analyze(response, groundTruth string) Rollout {
	return AnalyzeFinished(response, groundTruth, "")
}

// AnalyzeFinished finds the steps, the final answer and its correctness
// against groundTruth, with the same verify code the corpus was built with:
// no answer found means not correct. finish is the response's finish_reason
// as the endpoint gave it, "" when the caller does not have it. "length" or
// "content_filter" (verify.CutOffBy) says the response was cut off: no answer
// is taken from it, whatever it ends with, and CutOff says so. Any other
// reason ("stop") says the model ended it: it is never read as cut off. With
// none the verifier's rule for an unknown one applies: the response counts
// as cut off only when it stops inside math, a \boxed{ or its <think>; one
// truncated mid-sentence is read as it is (see verify.Options).
func AnalyzeFinished(response, groundTruth, finish string) Rollout {
	return AnalyzeStepsFinished(response, groundTruth, finish, Steps(response))
}

// AnalyzeSteps is Analyze with the response's steps found.
func AnalyzeSteps(response, groundTruth string, steps []StepSpan) Rollout {
	return AnalyzeStepsFinished(response, groundTruth, "", steps)
}

// AnalyzeStepsFinished is AnalyzeFinished with the response's steps found.
func AnalyzeStepsFinished(response, groundTruth, finish string, steps []StepSpan) Rollout {
	r := Rollout{Response: response, Steps: steps, Empty: Silent(response)}
	r.FormatOK = FormatOK(response, r.Steps)
	if verify.CutOffBy(finish) {
		r.CutOff = "finish_reason " + finish
	}
	if ans, _, ok := verify.ExtractWith(response, verify.Options{FinishReason: finish}); ok {
		r.Extracted = ans
		r.Correct = verify.Equal(groundTruth, ans)
	}
	return r
}

// JudgeOK reports whether the judge's verdicts are there.
func (r *Rollout) JudgeOK() bool { return r.Verdicts != nil }
