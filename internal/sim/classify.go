package sim

import (
	"regexp"
	"strconv"
	"strings"
)

// Message is one chat message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Kind names the template a request was rendered from; the values match the
// template names of package prompts.
type Kind string

// Kinds the simulated endpoint answers, and KindUnknown for anything else.
const (
	KindRollout               Kind = "rollout"
	KindDistillSRaR           Kind = "distill_srar"
	KindDistillFactualProcess Kind = "distill_factual_process"
	KindJudgeItem             Kind = "judge_item"
	KindJudgeBatch            Kind = "judge_batch"
	KindSatisfy               Kind = "satisfy"
	KindSatisfyGroup          Kind = "satisfy_group"
	KindScoreGrounded         Kind = "score_grounded"
	KindScoreGroundedGroup    Kind = "score_grounded_group"
	KindGroundedAnalyze       Kind = "grounded_analyze"
	KindGroundedSynthesize    Kind = "grounded_synthesize"
	KindGroundedEnrich        Kind = "grounded_enrich"
	KindGroundedJudgeBatch    Kind = "grounded_judge_batch"
	KindGroundedJudgeItem     Kind = "grounded_judge_item"
	KindGroundedAnswer        Kind = "grounded_answer"
	KindDecompose             Kind = "decompose"
	KindGroundedAnswerOpen    Kind = "grounded_answer_open"
	KindUnknown               Kind = "unknown"
)

// Classify tells which of the pipeline's templates produced messages. A
// repair conversation (the original prompt, the model's reply, a request to
// fix it) is classified by its original prompt.
func Classify(messages []Message) Kind {
	k, _, _ := classify(messages)
	return k
}

// classify returns the kind, the text of the stage's prompt (system and first
// user message), and whether the conversation is a repair.
func classify(messages []Message) (Kind, string, bool) {
	first := -1
	for i, m := range messages {
		if m.Role == "user" {
			first = i
			break
		}
	}
	if first < 0 || messages[len(messages)-1].Role != "user" {
		return KindUnknown, "", false
	}
	var b strings.Builder
	for _, m := range messages[:first+1] {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	prompt := b.String()
	repair := false
	for _, m := range messages[first+1:] {
		if m.Role == "assistant" {
			repair = true
		}
	}
	if len(messages) > first+1 && !repair {
		return KindUnknown, "", false
	}
	return kindOf(messages[first].Content), prompt, repair
}

// kindOf recognizes a stage prompt by the markers its template always
// renders. Tests run from the most to the least specific: solutions and
// rubrics quoted inside a prompt contain the rollout's markers.
func kindOf(p string) Kind {
	has := func(all ...string) bool {
		for _, s := range all {
			if !strings.Contains(p, s) {
				return false
			}
		}
		return true
	}
	if k := loopKind(p); k != KindUnknown {
		return k
	}
	switch {
	case has(`<saturated_item type="`, "</saturated_item>", "<problem>", "<ground_truth>"):
		return KindDecompose
	case has("<source_passage>", `"max_total"`, "[id: ", "[response ", "Reply with one line per response"):
		return KindScoreGroundedGroup
	case has("<source_passage>", `"max_total"`, "[id: ") && (has("[response ") || has("<response>")):
		return KindScoreGrounded
	case has(`<passage title="`, "<analysis", `"question_rationale"`, `"required_elements"`):
		return KindGroundedSynthesize
	case has(`<document title="`, `"genre"`, `"reasoning_mode"`):
		return KindGroundedAnalyze
	case has("<criteria_to_enrich>", `"verification_method"`, `"expected_keywords"`):
		return KindGroundedEnrich
	case has("<passage>", `<criterion id="`, `"valid"`, `"id"`):
		return KindGroundedJudgeBatch
	case has("<passage>", `<criterion weight="`, `"valid"`, `"reason"`):
		return KindGroundedJudgeItem
	case has("<passage>", "<question>", "</question>", "Answer the technical question below using the source passage"):
		return KindGroundedAnswerOpen
	case has("<question>", "</question>", "Answer the technical question below from what you know"):
		return KindGroundedAnswer
	case has("<rubric>", `"satisfied"`, "[solution ", "Reply with one line per solution"):
		return KindSatisfyGroup
	case has("<rubric>", `"satisfied"`, `"step"`) && (has("[solution ") || has("<solution>")):
		return KindSatisfy
	case has(`<item id="`, `"valid"`, `"id"`, "<ground_truth>"):
		return KindJudgeBatch
	case has(`<item type="`, `"valid"`, `"reason"`, "<ground_truth>"):
		return KindJudgeItem
	case has("<<SUGGEST>>", "<<ANSWER>>", "<problem>", "<ground_truth>"):
		return KindDistillSRaR
	case has("Factual Criteria: ", "Process Criteria: ", "<question>", "<ground_truth>"):
		return KindDistillFactualProcess
	case has("<problem>", "</problem>", "### Step", "<answer>"):
		return KindRollout
	}
	return KindUnknown
}

// between returns the trimmed text between the first open and the next close.
func between(s, open, close string) (string, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:j]), true
}

// betweenLast is between with the last open and the last close after it.
func betweenLast(s, open, close string) (string, bool) {
	i := strings.LastIndex(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.LastIndex(rest, close)
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:j]), true
}

// item is a rubric item quoted in a judge or satisfy prompt.
type item struct {
	ID   string
	Type string
	Text string
}

// idJSON renders an item id as a JSON number when it is one.
func (it item) idJSON() any {
	if n, err := strconv.ParseInt(it.ID, 10, 64); err == nil {
		return n
	}
	return it.ID
}

var reItemOpen = regexp.MustCompile(`<item id="([^"]*)" type="([^"]*)">`)

// parseItems reads every <item id=".." type="..">text</item> block.
func parseItems(p string) []item {
	var out []item
	for _, loc := range reItemOpen.FindAllStringSubmatchIndex(p, -1) {
		rest := p[loc[1]:]
		end := strings.Index(rest, "</item>")
		if end < 0 {
			end = len(rest)
		}
		out = append(out, item{
			ID:   p[loc[2]:loc[3]],
			Type: p[loc[4]:loc[5]],
			Text: strings.TrimSpace(rest[:end]),
		})
	}
	return out
}

var reItemTyped = regexp.MustCompile(`<item type="([^"]*)">`)

// parseSingleItem reads the judge_item prompt's <item type="..">text</item>.
func parseSingleItem(p string) (item, bool) {
	loc := reItemTyped.FindStringSubmatchIndex(p)
	if loc == nil {
		return item{}, false
	}
	rest := p[loc[1]:]
	end := strings.Index(rest, "</item>")
	if end < 0 {
		return item{}, false
	}
	return item{Type: p[loc[2]:loc[3]], Text: strings.TrimSpace(rest[:end])}, true
}

// countSteps counts "### Step" header lines.
func countSteps(solution string) int {
	n := 0
	for line := range strings.Lines(solution) {
		if strings.HasPrefix(strings.TrimSpace(line), "### Step") {
			n++
		}
	}
	return n
}

// maxLines reads the distill prompt's line budget ("At most N lines"); 0
// when absent.
func maxLines(p string) int {
	for _, marker := range []string{"At most ", "at most "} {
		for rest := p; ; {
			i := strings.Index(rest, marker)
			if i < 0 {
				break
			}
			rest = rest[i+len(marker):]
			j := 0
			for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				j++
			}
			if j > 0 && strings.HasPrefix(rest[j:], " lines") {
				n, _ := strconv.Atoi(rest[:j])
				return n
			}
		}
	}
	return 0
}
