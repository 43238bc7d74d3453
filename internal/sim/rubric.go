package sim

import (
	"encoding/json"
	"strings"
)

var suggestLines = []string{
	"Introduces a variable for the unknown quantity and states clearly what it represents.",
	"Writes an equation that uses the given value {N} exactly as the problem states it.",
	"Reduces the condition on {W} to a single equation or inequality before solving.",
	"Simplifies the resulting expression fully before substituting numbers.",
	"Checks that the candidate result satisfies every condition in the problem statement.",
	"Keeps the constraints on {W} in force throughout the computation.",
	"Splits the problem into the cases the conditions allow and treats each case separately.",
	"Uses the value {N} to fix the size of the set or range being counted.",
	"Justifies each algebraic manipulation instead of jumping from the setup to the result.",
	"Identifies how {W} relates to the requested quantity before computing anything.",
	"Computes the intermediate quantity correctly before combining it with {N}.",
	"Discards extraneous solutions introduced by squaring or by multiplying through.",
	"Applies the relevant formula with correctly identified parameters.",
}

var pitfallLines = []string{
	"Attaches {N} to the wrong quantity, which changes the whole setup.",
	"Drops a negative sign while rearranging the main equation.",
	"Counts a boundary case twice, or leaves it out, when enumerating.",
	"Stops after one solution although the problem asks for all of them.",
	"Confuses {W} with the quantity the question actually asks for.",
	"Divides by an expression that can be zero without checking it.",
}

var bonusLines = []string{
	"Uses a symmetry of the problem to avoid a long case analysis.",
	"Confirms the result by an independent second method.",
	"Finds a substitution that turns the problem into a standard form in one step.",
}

// oneLine makes text safe to put on a single rubric line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// line is one <<TAG>>: line of an srar rubric.
type line struct{ tag, text string }

// plantSRaR adds planted paraphrases to an srar rubric's lines, leaving
// room for its ANSWER line within budget (0: no budget).
func (s *Server) plantSRaR(problem string, lines []line, r *rng, budget int) []line {
	room := len(lines) + 3
	if budget > 0 {
		room = budget - 1
	}
	types, texts := make([]string, len(lines)), make([]string, len(lines))
	for i, l := range lines {
		types[i], texts[i] = l.tag, l.text
	}
	types, texts = s.withParaphrases(strings.TrimSpace(problem), types, texts, r, room)
	out := make([]line, len(texts))
	for i := range texts {
		out[i] = line{types[i], texts[i]}
	}
	return out
}

// srarRubric writes <<TAG>>: lines for a distill_srar prompt.
func (s *Server) srarRubric(prompt string, r *rng, malformed bool) string {
	problem, _ := between(prompt, "<problem>", "</problem>")
	gold, _ := betweenLast(prompt, "<ground_truth>", "</ground_truth>")
	c := problemCues(problem)
	nS, nP, nB := 3+r.intn(4), r.intn(3), r.intn(2)
	if budget := maxLines(prompt); budget > 0 {
		for nS+nP+nB+1 > budget && nB > 0 {
			nB--
		}
		for nS+nP+nB+1 > budget && nP > 0 {
			nP--
		}
		for nS+nP+nB+1 > budget && nS > 1 {
			nS--
		}
	}
	var lines []line
	take := func(tag string, bank []string, n int) {
		for _, i := range r.perm(len(bank))[:n] {
			lines = append(lines, line{tag, c.fill(r, bank[i])})
		}
	}
	take("SUGGEST", suggestLines, nS)
	take("PITFALL", pitfallLines, nP)
	take("BONUS", bonusLines, nB)
	if s.cfg.Plant != nil {
		lines = s.plantSRaR(problem, lines, r, maxLines(prompt))
	}
	lines = append(lines, line{"ANSWER", "The final answer is equivalent to " + oneLine(gold) + "."})
	if malformed {
		if r.chance(0.5) {
			lines = lines[:len(lines)-1]
		} else {
			lines = append(lines[:1], append([]line{{"HINT", "Consider drawing a diagram first."}}, lines[1:]...)...)
		}
	}

	open, close, bullet, blank, fence := "<<", ">>", "", false, false
	if r.chance(0.10) {
		switch r.intn(4) {
		case 0:
			fence = true
		case 1:
			bullet = "- "
		case 2:
			blank = true
		default:
			open, close = "<", ">"
		}
	}
	var b strings.Builder
	if fence {
		b.WriteString("```text\n")
	}
	for i, l := range lines {
		if blank && i == 1 {
			b.WriteString("\n")
		}
		b.WriteString(bullet + open + l.tag + close + ": " + l.text + "\n")
	}
	if fence {
		b.WriteString("```\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

var factualLines = []string{
	"Factual Criteria: The response states that the final result is {A}.",
	"Factual Criteria: The response gives exactly one final value, equal to {A}, with no contradictory alternative.",
}

var processLines = []string{
	"Process Criteria: The response defines the unknown quantity and expresses the question's conditions in terms of it.",
	"Process Criteria: The response uses the given value {N} correctly in its main equation.",
	"Process Criteria: The response derives the intermediate result that links {W} to the requested quantity.",
	"Process Criteria: The response names the principle or theorem it relies on and applies it with correct parameters.",
	"Process Criteria: The response simplifies the intermediate expression correctly before the final step.",
	"Process Criteria: The response checks its result against the constraints stated in the question.",
	"Process Criteria: The response handles every case the question allows rather than only one.",
}

type criterion struct {
	Description string `json:"description"`
	Weight      int    `json:"weight"`
}

// factualProcessRubric writes the JSON criteria for a distill_factual_process prompt.
func (s *Server) factualProcessRubric(prompt string, r *rng, malformed, jsonMode bool) string {
	question, _ := between(prompt, "<question>", "</question>")
	gold, _ := betweenLast(prompt, "<ground_truth>", "</ground_truth>")
	c := problemCues(question)
	total := 3 + r.intn(6)
	if s.cfg.Plant != nil {
		total = 6 + r.intn(4) // room to drop planted defects and keep 3 items
	}
	nF := 1 + r.intn(2)
	var items []criterion
	for i := range nF {
		text := strings.ReplaceAll(factualLines[i], "{A}", oneLine(gold))
		items = append(items, criterion{text, 5 - i})
	}
	// At most every process line once: a draw of 9 items with one
	// FACTUAL item asks for more PROCESS items than there are lines.
	for _, i := range r.perm(len(processLines))[:min(total-nF, len(processLines))] {
		items = append(items, criterion{c.fill(r, processLines[i]), 1 + r.intn(4)})
	}
	if s.cfg.Plant != nil {
		items = s.plantFactualProcess(question, items, r)
	}
	var raw []byte
	if r.chance(0.5) {
		raw, _ = json.MarshalIndent(items, "", "  ")
	} else {
		raw, _ = json.Marshal(items)
	}
	body := string(raw)
	if malformed {
		body = body[:len(body)*2/3]
	}
	switch u := r.float(); {
	case jsonMode:
	case u < 0.15:
		return "```json\n" + body + "\n```"
	case u < 0.25:
		return "Here is a rubric for this question.\n\n" + body
	}
	return body
}

// plantFactualProcess adds planted paraphrases to weighted criteria, up to
// the style's 10 items; a paraphrase has its original's weight.
func (s *Server) plantFactualProcess(question string, items []criterion, r *rng) []criterion {
	types, texts := make([]string, len(items)), make([]string, len(items))
	weight := map[string]int{}
	for i, c := range items {
		typ, body, _ := strings.Cut(c.Description, " Criteria: ")
		types[i], texts[i] = strings.ToUpper(typ), body
		weight[body] = c.Weight
	}
	types, texts = s.withParaphrases(strings.TrimSpace(question), types, texts, r, 10)
	out := make([]criterion, len(texts))
	for i, text := range texts {
		orig := text
		if o, ok := paraphrased(text); ok {
			orig = o
		}
		prefix := "Process"
		if types[i] == "FACTUAL" {
			prefix = "Factual"
		}
		out[i] = criterion{prefix + " Criteria: " + text, weight[orig]}
	}
	return out
}
