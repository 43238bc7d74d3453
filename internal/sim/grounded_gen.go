package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The grounded style's generation stages (templates grounded_*), answered
// as a model reading the prompt would: the analysis names the passage's
// most frequent long words as its concepts; the synthesis writes K
// questions about those concepts with 5-10 criteria whose keywords and
// required elements are words of the passage, some of them thin (one
// keyword, a terse verification method) as models often leave them, and
// now and then (about one passage in twenty) a question that copies a
// sentence of the passage; enrichment completes exactly the criteria it is
// shown, adding one of the document analysis's concepts to each; the validity judge calls a few criteria invalid, deterministically
// per criterion, so batch and item mode agree; a closed-book answer
// mentions a random share of the question's terms, so answers differ; an
// open-book answer (the passage in the prompt) adds a random share of the
// passage's own terms, those the criteria's keywords are drawn from, so
// the judge scores it higher than a closed-book one on the criteria
// grounded in the passage. A
// malformed attempt breaks the stage's JSON the way models do (a field
// left out, a weight as a string, a list as one string, a reply cut short).

var (
	rePassage       = regexp.MustCompile(`<passage(?: title="([^"]*)")?>\n?`)
	reCriterionOpen = regexp.MustCompile(`<criterion id="([^"]*)"[^>]*>`)
	reCriterionOne  = regexp.MustCompile(`<criterion weight="[^"]*">`)
	reWriteK        = regexp.MustCompile(`Write (\d+) question-rubric`)
	reBetween       = regexp.MustCompile(`Between (\d+) and (\d+) criteria`)
)

// groundedPassage reads the passage and its title from a grounded prompt.
func groundedPassage(p string) (title, passage string) {
	loc := rePassage.FindStringSubmatchIndex(p)
	if loc == nil {
		return "", ""
	}
	if loc[2] >= 0 {
		title = p[loc[2]:loc[3]]
	}
	rest := p[loc[1]:]
	if j := strings.LastIndex(rest, "</passage>"); j >= 0 {
		rest = rest[:j]
	}
	return title, strings.TrimSpace(rest)
}

var reDocument = regexp.MustCompile(`<document title="[^"]*"[^>]*>\n?`)

// groundedDocument reads the document's text (its beginning and its
// outline) from an analysis prompt.
func groundedDocument(p string) string {
	loc := reDocument.FindStringIndex(p)
	if loc == nil {
		return ""
	}
	rest := p[loc[1]:]
	text := rest
	if j := strings.Index(rest, "</document>"); j >= 0 {
		text = rest[:j]
	}
	if outline, ok := between(rest, "<outline>", "</outline>"); ok {
		text += "\n" + outline
	}
	return strings.TrimSpace(text)
}

var termStopWords = map[string]bool{
	"because": true, "between": true, "through": true, "however": true, "therefore": true, "without": true,
	"within": true, "which": true, "where": true, "there": true, "these": true, "those": true, "their": true,
	"other": true, "should": true, "would": true, "could": true, "about": true, "after": true, "before": true,
	"under": true, "while": true, "every": true, "always": true, "never": true, "since": true, "until": true,
}

// topTerms are the passage's n most frequent words of six letters or more.
func topTerms(passage string, n int) []string {
	return firstTerms(rankTerms(passage), n)
}

// rankTerms are the passage's words of six letters or more, lower-cased,
// most frequent first and equally frequent ones in byte order.
func rankTerms(passage string) []string {
	count := make(map[string]int, len(passage)/16)
	for _, w := range termWords(strings.ToLower(passage)) {
		w = strings.Trim(w, "-")
		if utf8.RuneCountInString(w) >= 6 && !termStopWords[w] {
			count[w]++
		}
	}
	type termCount struct {
		term  string
		count int
	}
	ranked := make([]termCount, 0, len(count))
	for w, c := range count {
		ranked = append(ranked, termCount{w, c})
	}
	slices.SortFunc(ranked, func(a, b termCount) int {
		if a.count != b.count {
			return cmp.Compare(b.count, a.count)
		}
		return strings.Compare(a.term, b.term)
	})
	terms := make([]string, len(ranked))
	for i, t := range ranked {
		terms[i] = t.term
	}
	return terms
}

// termWords splits lower-cased text into runs of letters and hyphens. ASCII
// text, the usual passage, is split byte by byte without decoding runes;
// anything else goes through unicode's tables.
func termWords(lower string) []string {
	for i := 0; i < len(lower); i++ {
		if lower[i] >= utf8.RuneSelf {
			return strings.FieldsFunc(lower, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' })
		}
	}
	var out []string
	for i := 0; i < len(lower); {
		for i < len(lower) && !isTermByte(lower[i]) {
			i++
		}
		start := i
		for i < len(lower) && isTermByte(lower[i]) {
			i++
		}
		if start < i {
			out = append(out, lower[start:i])
		}
	}
	return out
}

func isTermByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '-'
}

// firstTerms are the first n of ranked terms in a slice of their own; a
// passage of short words still has two concepts.
func firstTerms(ranked []string, n int) []string {
	terms := slices.Clone(ranked[:min(n, len(ranked))])
	for len(terms) < 2 {
		terms = append(terms, []string{"mechanism", "principle"}[len(terms)])
	}
	return terms
}

func firstSentence(passage string) string {
	s := strings.Join(strings.Fields(passage), " ")
	if i := strings.IndexAny(s, ".!?"); i > 0 {
		s = s[:i+1]
	}
	return excerpt(s, 200)
}

type analysisJSON struct {
	Genre         string   `json:"genre"`
	Contribution  string   `json:"contribution"`
	Concepts      []string `json:"concepts"`
	Depth         string   `json:"depth"`
	ReasoningMode string   `json:"reasoning_mode"`
}

func (s *Server) groundedAnalyze(prompt string, r *rng, malformed, jsonMode bool) string {
	passage := groundedDocument(prompt)
	lower := strings.ToLower(passage)
	a := analysisJSON{Genre: "technical report", Contribution: firstSentence(passage), Concepts: topTerms(passage, 3+r.intn(4)),
		Depth: "intermediate", ReasoningMode: "definition"}
	switch {
	case strings.Contains(passage, "```") || strings.Contains(lower, "func "):
		a.Genre = "software documentation"
	case strings.Contains(lower, "we propose") || strings.Contains(lower, "results"):
		a.Genre = "research article"
	}
	switch {
	case strings.Contains(lower, "because") || strings.Contains(lower, "therefore"):
		a.ReasoningMode = "causal explanation"
	case strings.Contains(lower, "first") && strings.Contains(lower, "then"):
		a.ReasoningMode = "procedure"
	}
	if len(strings.Fields(passage)) > 300 {
		a.Depth = "advanced"
	}
	if malformed {
		raw, _ := json.Marshal(map[string]any{"genre": a.Genre, "contribution": a.Contribution, "concepts": strings.Join(a.Concepts, ", "), "depth": a.Depth})
		return breakJSON(string(raw), r)
	}
	return marshalOrFence(a, r, jsonMode)
}

type criterionJSON struct {
	ID                 string   `json:"id"`
	Weight             any      `json:"weight"`
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	RequiredElements   []string `json:"required_elements"`
	ScoringGuide       string   `json:"scoring_guide"`
	VerificationMethod string   `json:"verification_method"`
	ExpectedKeywords   []string `json:"expected_keywords"`
	ExpectedConcepts   []string `json:"expected_concepts"`
}

type questionJSON struct {
	Question  string          `json:"question"`
	Rationale string          `json:"question_rationale"`
	Criteria  []criterionJSON `json:"criteria"`
}

func (s *Server) groundedSynthesize(prompt string, r *rng, malformed, jsonMode bool) string {
	title, passage := groundedPassage(prompt)
	k := 1
	if m := reWriteK.FindStringSubmatch(prompt); m != nil {
		k, _ = strconv.Atoi(m[1])
	}
	lo, hi := 5, 10
	if m := reBetween.FindStringSubmatch(prompt); m != nil {
		lo, _ = strconv.Atoi(m[1])
		hi, _ = strconv.Atoi(m[2])
	}
	ranked := rankTerms(passage)
	concepts := firstTerms(ranked, 8) // the passage's own first: the analysis is its document's
	if c, ok := between(prompt, "concepts: ", "\n"); ok && c != "" {
		concepts = append(concepts, strings.Split(c, "; ")...)
	}
	terms := firstTerms(ranked, 24)
	subject := title
	if subject == "" {
		subject = "this kind of system"
	}
	copies := unit(key(s.cfg.Seed, "copy", passage)) < 0.05
	qs := make([]questionJSON, k)
	for q := range k {
		a, b := concepts[q%len(concepts)], concepts[(q+1)%len(concepts)]
		qs[q] = questionJSON{
			Question:  fmt.Sprintf("In %s, how does %s interact with %s, and what would change if %s were removed or constrained?", subject, a, b, a),
			Rationale: fmt.Sprintf("Answering needs an account of why %s matters for %s, not a recalled phrase.", a, b),
		}
		if copies && q == 0 {
			qs[q].Question = "Explain the following: " + strings.Join(strings.Fields(passage), " ")
		}
		n := lo + r.intn(hi-lo+1)
		for i := range n {
			t1, t2, t3 := terms[(q*7+i)%len(terms)], terms[(q*7+i+1)%len(terms)], terms[(q*7+i+3)%len(terms)]
			c := criterionJSON{
				ID: "c" + strconv.Itoa(i+1), Weight: 1 + r.intn(5),
				Name:               "Role of " + t1,
				Description:        fmt.Sprintf("The answer explains the role of %s and how it bears on %s.", t1, t2),
				RequiredElements:   []string{t1, t1 + " in relation to " + t2},
				ScoringGuide:       "Full weight for a correct, specific account; half for a vague one; none if missing or wrong.",
				VerificationMethod: fmt.Sprintf("Compare the answer's statements about %s with what the passage says about it.", t1),
				ExpectedKeywords:   []string{t1, t2, t3},
				ExpectedConcepts:   []string{a, t1},
			}
			if r.chance(0.3) { // thin, as models often leave a criterion
				c.VerificationMethod, c.ExpectedKeywords, c.ExpectedConcepts = "Check the passage.", []string{t1}, []string{t1}
			}
			if r.chance(0.2) {
				c.Weight = float64(c.Weight.(int)) + 0.5
			}
			qs[q].Criteria = append(qs[q].Criteria, c)
		}
	}
	if malformed {
		switch r.intn(3) {
		case 0:
			qs[0].Criteria[0].Weight = "3"
		case 1:
			qs[0].Criteria[len(qs[0].Criteria)-1].Weight = -2
		default:
			raw, _ := json.Marshal(map[string]any{"questions": qs})
			return string(raw)[:len(raw)/2]
		}
	}
	return marshalOrFence(questionsReply(qs), r, jsonMode)
}

type enrichJSON struct {
	ID                 string   `json:"id"`
	VerificationMethod string   `json:"verification_method"`
	ExpectedKeywords   []string `json:"expected_keywords"`
	ExpectedConcepts   []string `json:"expected_concepts"`
}

func (s *Server) groundedEnrich(prompt string, r *rng, malformed, jsonMode bool) string {
	passage, _ := between(prompt, "<passage>", "</passage>")
	terms := topTerms(passage, 12)
	block, _ := between(prompt, "<criteria_to_enrich>", "</criteria_to_enrich>")
	var docConcepts []string // the analysis's, when the prompt shows it
	if c, ok := between(prompt, "concepts: ", "\n"); ok && c != "" {
		docConcepts = strings.Split(c, "; ")
	}
	var out []enrichJSON
	for i, loc := range reCriterionOpen.FindAllStringSubmatchIndex(block, -1) {
		id := block[loc[2]:loc[3]]
		name := id
		if n, ok := between(block[loc[0]:], `name="`, `"`); ok {
			name = n
		}
		out = append(out, enrichJSON{
			ID:                 id,
			VerificationMethod: fmt.Sprintf("Find where the passage discusses %s and check that the answer's claims about it agree; an answer that contradicts it gets no credit.", strings.ToLower(name)),
			ExpectedKeywords:   []string{terms[i%len(terms)], terms[(i+1)%len(terms)], terms[(i+2)%len(terms)], terms[(i+5)%len(terms)]},
			ExpectedConcepts:   []string{terms[(i+3)%len(terms)], terms[(i+4)%len(terms)]},
		})
		if len(docConcepts) > 0 {
			out[len(out)-1].ExpectedConcepts = append(out[len(out)-1].ExpectedConcepts, docConcepts[i%len(docConcepts)])
		}
	}
	if malformed && len(out) > 0 {
		if r.chance(0.5) {
			out = out[1:]
		} else {
			raw, _ := json.Marshal(out)
			return strings.Replace(string(raw), `"expected_keywords":[`, `"expected_keywords":"`, 1)
		}
	}
	return marshalOrFence(enrichReply(out), r, false)
}

// groundedVerdict is the judge's opinion of one criterion: it depends only
// on the passage and the criterion's text, so batch and item mode agree.
func (s *Server) groundedVerdict(passage, text string) (bool, string) {
	h := key(s.cfg.Seed, "grounded-validity", passage, text)
	if unit(h) < s.cfg.InvalidRate {
		return false, "The passage does not support what this criterion asks for."
	}
	return true, "The passage supports the criterion and a grader can check it."
}

func (s *Server) groundedJudgeBatch(model, prompt string, r *rng, malformed, jsonMode bool) string {
	passage, _ := between(prompt, "<passage>", "</passage>")
	jp := s.judgeOf(model)
	if s.judgeFails(model, jp, "grounded-validity", passage) {
		return unusableReply
	}
	var out []batchVerdictJSON
	locs := reCriterionOpen.FindAllStringSubmatchIndex(prompt, -1)
	for i, loc := range locs {
		rest := prompt[loc[1]:]
		text := strings.TrimSpace(rest[:max(0, strings.Index(rest, "</criterion>"))])
		valid, reason := s.groundedVerdict(passage, text)
		valid, reason = s.judgedVerdict(model, jp, valid, reason, i, len(locs), passage, text)
		out = append(out, batchVerdictJSON{item{ID: prompt[loc[2]:loc[3]]}.idJSON(), valid, reason})
	}
	if malformed {
		raw, _ := json.Marshal(out)
		return breakJSON(string(raw), r)
	}
	return marshalOrFence(out, r, jsonMode)
}

func (s *Server) groundedJudgeItem(model, prompt string, r *rng, malformed, jsonMode bool) string {
	passage, _ := between(prompt, "<passage>", "</passage>")
	text := ""
	if loc := reCriterionOne.FindStringIndex(prompt); loc != nil {
		rest := prompt[loc[1]:]
		text = strings.TrimSpace(rest[:max(0, strings.Index(rest, "</criterion>"))])
	}
	jp := s.judgeOf(model)
	if s.judgeFails(model, jp, "grounded-validity", passage, text) {
		return unusableReply
	}
	valid, reason := s.groundedVerdict(passage, text)
	valid, reason = s.judgedVerdict(model, jp, valid, reason, 0, 1, passage, text)
	raw, _ := json.Marshal(verdictJSON{valid, reason})
	if malformed {
		return breakJSON(string(raw), r)
	}
	return marshalOrFence(verdictJSON{valid, reason}, r, jsonMode)
}

// groundedAnswer writes a closed-book answer that mentions a random share
// of the question's longer words: answers to one question differ, so the
// grounded judge's scores of them differ too.
func (s *Server) groundedAnswer(prompt string, r *rng) string {
	question, _ := between(prompt, "<question>", "</question>")
	terms := topTerms(question, 6)
	var used []string
	for _, t := range terms {
		if r.chance(0.5) {
			used = append(used, t)
		}
	}
	if len(used) == 0 {
		return "I am not certain; in general such systems trade simplicity against robustness, and the details depend on the design."
	}
	return answerAbout(used)
}

// answerAbout is the body of a simulated answer that mentions terms.
func answerAbout(terms []string) string {
	return fmt.Sprintf("The key is how %s work together. %s matters because it sets the conditions the rest depends on; if it is constrained, %s must compensate, which changes the overall behaviour.",
		strings.Join(terms, " and "), strings.ToUpper(terms[0][:1])+terms[0][1:], terms[len(terms)-1])
}

// openBookShare is the chance that an open-book answer mentions each of the
// passage's leading terms.
const openBookShare = 0.6

// groundedAnswerOpen writes an open-book answer: the closed-book answer's
// body with every one of the question's terms (a closed-book answer names
// a random share of them), then what the passage says, mentioning each of
// its 24 leading terms (the pool the synthesized criteria's keywords come
// from) with chance openBookShare. So an open-book answer mentions every
// term a closed-book answer to the question can, and more: it meets the
// passage-grounded criteria at least as well, and most of them better.
func (s *Server) groundedAnswerOpen(prompt string, r *rng) string {
	question, _ := between(prompt, "<question>", "</question>")
	_, passage := groundedPassage(prompt)
	var parts []string
	if terms := topTerms(question, 6); len(terms) > 0 {
		parts = append(parts, answerAbout(terms))
	}
	var used []string
	for _, t := range firstTerms(rankTerms(passage), 24) {
		if r.chance(openBookShare) {
			used = append(used, t)
		}
	}
	if len(used) > 0 {
		parts = append(parts, "The passage makes this concrete: it discusses "+strings.Join(used, ", ")+", and how each bears on the question.")
	}
	if len(parts) == 0 {
		return "The passage says little that bears on this question."
	}
	return strings.Join(parts, "\n\n")
}
