package prompts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// Layout is where a judge prompt puts what varies from one request to the
// next. Inference servers reuse any prompt prefix they have already
// computed (vLLM's automatic prefix caching, SGLang's radix cache, the
// hosted APIs' prompt caching), so the cache layout puts first what a
// problem's requests share (the instructions, the reply format, the
// problem or passage and question, the rubric or criteria) and the judged
// response last, followed by one short fixed line: a group of responses to
// one problem pays for the shared part once. The paper layout keeps the
// seeds' order (seed 001 puts the criteria after the response), for a
// judge that grades differently with them first.
type Layout string

// The layouts.
const (
	LayoutCache Layout = "cache"
	LayoutPaper Layout = "paper"
)

// Layouts lists the layouts, the default first.
var Layouts = []Layout{LayoutCache, LayoutPaper}

// ParseLayout reads a layout's name ("" is the cache layout).
func ParseLayout(s string) (Layout, error) {
	switch Layout(s) {
	case LayoutCache, "":
		return LayoutCache, nil
	case LayoutPaper:
		return LayoutPaper, nil
	}
	return "", fmt.Errorf("%q is not a judge layout: want %s or %s", s, LayoutCache, LayoutPaper)
}

// paperSuffix names a judge template's paper-layout twin.
const paperSuffix = "_paper"

// judgeTemplates are the templates with a twin in each layout.
var judgeTemplates = []string{Satisfy, ScoreGrounded, JudgeItem, JudgeBatch, GroundedJudgeItem, GroundedJudgeBatch}

// Of is the name of judge template name in layout l: name itself in the
// cache layout, its "_paper" twin in the paper layout. A name without
// twins is itself in both.
func (l Layout) Of(name string) string {
	name = strings.TrimSuffix(name, paperSuffix)
	if l != LayoutPaper {
		return name
	}
	for _, t := range judgeTemplates {
		if t == name {
			return name + paperSuffix
		}
	}
	return name
}

// View is how a judge prompt shows what it judges: its layout and the
// budget of the response shown.
type View struct {
	Layout Layout
	// MaxResponseTokens bounds the response shown, in estimated tokens
	// (EstimateTokens): a longer one is shown head and tail, with a line
	// saying how much was left out in between. 0 or less: no bound.
	MaxResponseTokens int
}

// Shown says what a judge was shown of a response.
type Shown struct {
	// Cut: the response was over the budget and its middle was left out,
	// the bytes HiddenFrom to HiddenTo of it.
	Cut                  bool
	HiddenFrom, HiddenTo int
	// Chars and ShownChars count the response's characters and those shown.
	Chars, ShownChars int
}

// SatisfyView is SatisfyMessages in view v: the template of v's layout,
// the solution cut to v's budget. It returns what the judge was shown of
// the solution.
func (s *Set) SatisfyView(v View, problem, solution, finalAnswer string, items []schema.Item) ([]Message, Shown, error) {
	from, to, shown := fitResponse(solution, v.MaxResponseTokens)
	text := tagStepsHiding(solution, from, to, shown.note("solution"))
	msgs, err := s.render(v.Layout.Of(Satisfy), struct {
		Problem, Solution, FinalAnswer, Boundary string
		Items                                    []schema.Item
	}{problem, text, oneLine(escapeTags(finalAnswer)), boundaryID(solution, text), escapeItems(items)})
	return msgs, shown, err
}

// ScoreGroundedView is ScoreGroundedMessages in view v: the template of
// v's layout, the response cut to v's budget. It returns what the judge
// was shown of the response.
func (s *Set) ScoreGroundedView(v View, passage, question, response string, criteria []schema.Criterion) ([]Message, Shown, error) {
	text, shown := groundedShown(response, v.MaxResponseTokens)
	msgs, err := s.render(v.Layout.Of(ScoreGrounded), struct {
		Passage, Question, Response, Boundary string
		Criteria                              []criterionView
		TotalWeight                           string
	}{passage, question, text, boundaryID(response, text), criterionViews(criteria), FormatWeight(schema.TotalWeight(criteria))})
	return msgs, shown, err
}

// groundedShown is what a grounded judge is shown of response within
// maxTokens estimated tokens: its text escaped, head and tail with a note
// in between when it is longer.
func groundedShown(response string, maxTokens int) (string, Shown) {
	from, to, shown := fitResponse(response, maxTokens)
	if !shown.Cut {
		return escapeTags(response), shown
	}
	return strings.TrimRight(escapeTags(response[:from]), "\n") + "\n" + shown.note("response") + "\n" + strings.TrimLeft(escapeTags(response[to:]), "\n"), shown
}

// JudgeItemMessagesIn is JudgeItemMessages in layout l.
func (s *Set) JudgeItemMessagesIn(l Layout, problem, answer string, item schema.Item) ([]Message, error) {
	return s.render(l.Of(JudgeItem), struct {
		Problem, Answer string
		Item            schema.Item
	}{problem, answer, item})
}

// JudgeBatchMessagesIn is JudgeBatchMessages in layout l.
func (s *Set) JudgeBatchMessagesIn(l Layout, problem, answer string, items []schema.Item) ([]Message, error) {
	return s.render(l.Of(JudgeBatch), struct {
		Problem, Answer string
		Items           []schema.Item
	}{problem, answer, items})
}

// GroundedJudgeBatchMessagesIn is GroundedJudgeBatchMessages in layout l.
func (s *Set) GroundedJudgeBatchMessagesIn(l Layout, passage, question string, criteria []schema.Criterion) ([]Message, error) {
	return s.render(l.Of(GroundedJudgeBatch), struct {
		Passage, Question string
		Criteria          []schema.Criterion
	}{passage, question, criteria})
}

// GroundedJudgeItemMessagesIn is GroundedJudgeItemMessages in layout l.
func (s *Set) GroundedJudgeItemMessagesIn(l Layout, passage, question string, c schema.Criterion) ([]Message, error) {
	return s.render(l.Of(GroundedJudgeItem), struct {
		Passage, Question string
		Criterion         schema.Criterion
	}{passage, question, c})
}

// The response's block. A judged response is shown between the line
// "[KIND ID]" and the line "[end of KIND ID]" (KIND "solution" or
// "response"), and the templates tell the judge that everything between is
// the response's own text. ID is 16 hex digits of SHA-256 of the response:
// a response cannot hold the id of its own text (that would take a fixed
// point of SHA-256), and the same response always gets the same prompt, so
// the response cache and the verdict memory stay deterministic. The id
// sits only in the two lines around the response, never in the shared part
// of the prompt. Inside the block every tag the judge templates use is
// escaped (escapeTags), and so is a line that would pass for a boundary
// line, so a response cannot end its block early or plant rubric items,
// criteria or instructions for a judge that reads tags loosely.

// boundaryID is the id of response's block, whose shown text is shown:
// derived from the response, and derived again on the rare chance that
// the shown text holds it.
func boundaryID(response, shown string) string {
	sum := sha256.Sum256([]byte(response))
	for n := byte(1); ; n++ {
		id := hex.EncodeToString(sum[:8])
		if !strings.Contains(shown, id) {
			return id
		}
		sum = sha256.Sum256(append(sum[:], n))
	}
}

// templateTags are the tag names the judge templates use, escaped in a
// judged response wherever they open a tag.
var templateTags = []string{"step", "solution", "response", "rubric", "item", "criteri", "problem", "question", "source_passage", "passage", "final_answer", "ground_truth"}

// escapeTags is s with the '<' of everything that could pass for one of
// the templates' tags written as "&lt;": a '<', then maybe white space
// and '/', then one of templateTags (any case); and the '[' of what could
// pass for a response block's boundary line ("[end of solution ", any
// case) as "&#91;".
func escapeTags(s string) string {
	if !strings.ContainsAny(s, "<[") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	writeEscaped(&b, s)
	return b.String()
}

// boundaryPrefixes start what could pass for a boundary line.
var boundaryPrefixes = []string{"[solution ", "[response ", "[end of solution ", "[end of response "}

// opensBoundary reports whether s starts with what could pass for a
// response block's boundary line (any case).
func opensBoundary(s string) bool {
	for _, p := range boundaryPrefixes {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// oneLine is s on one line: its line breaks as spaces (an extracted
// answer, shown on the line before the solution).
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", " ").Replace(s)), " ")
}

// escapeItems is items with their texts escaped (escapeTags): an item
// proposed by a policy (RLCER's) joins the rubric section and must not
// end it either.
func escapeItems(items []schema.Item) []schema.Item {
	for i, it := range items {
		if escapeTags(it.Text) != it.Text {
			out := append([]schema.Item(nil), items...)
			for k := i; k < len(out); k++ {
				out[k].Text = escapeTags(out[k].Text)
			}
			return out
		}
	}
	return items
}

// criterionViews are criteria as the grounded judge templates show them.
func criterionViews(criteria []schema.Criterion) []criterionView {
	shown := make([]criterionView, len(criteria))
	for i, c := range criteria {
		shown[i] = criterionView{
			Number:             i + 1,
			ID:                 c.ID,
			Name:               c.Name,
			Weight:             FormatWeight(c.Weight),
			Description:        c.Description,
			RequiredElements:   listText(c.RequiredElements),
			ScoringGuide:       c.ScoringGuide,
			ExpectedKeywords:   listText(c.ExpectedKeywords),
			VerificationMethod: c.VerificationMethod,
		}
	}
	return shown
}
