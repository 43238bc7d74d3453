package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	reNumber = regexp.MustCompile(`\d+(?:\.\d+)?`)
	reWordTk = regexp.MustCompile(`[A-Za-z]{5,}`)
)

var stopWords = map[string]bool{
	"which": true, "there": true, "their": true, "these": true, "those": true, "where": true,
	"given": true, "value": true, "values": true, "answer": true, "find": true, "compute": true,
	"what": true, "about": true, "would": true, "could": true, "should": true, "other": true,
	"every": true, "number": true, "numbers": true, "following": true, "problem": true,
	"express": true, "determine": true, "suppose": true, "consider": true, "after": true,
	"first": true, "exactly": true, "smallest": true, "largest": true,
}

// cues are a few numbers and words taken from a problem, so that generated
// text mentions the problem's own quantities.
type cues struct {
	nums  []string
	words []string
}

func problemCues(problem string) cues {
	var c cues
	seen := map[string]bool{}
	for _, n := range reNumber.FindAllString(problem, 8) {
		if !seen[n] {
			seen[n] = true
			c.nums = append(c.nums, n)
		}
	}
	for _, w := range reWordTk.FindAllString(problem, 40) {
		lw := strings.ToLower(w)
		if !stopWords[lw] && !seen[lw] {
			seen[lw] = true
			c.words = append(c.words, lw)
		}
	}
	return c
}

func (c cues) num(r *rng) string {
	if len(c.nums) == 0 {
		return "the given data"
	}
	return pick(r, c.nums)
}

// fill replaces {N} with a number and {W} with a word from the problem.
func (c cues) fill(r *rng, template string) string {
	out := strings.ReplaceAll(template, "{N}", c.num(r))
	return strings.ReplaceAll(out, "{W}", c.word(r))
}

func (c cues) word(r *rng) string {
	if len(c.words) == 0 {
		return "the unknown quantity"
	}
	return pick(r, c.words)
}

var stepTitles = []string{
	"Understand what is asked",
	"Identify the key quantities",
	"Translate the conditions into equations",
	"Simplify the expression",
	"Solve for the unknown",
	"Apply the relevant formula",
	"Combine the partial results",
	"Check the result",
}

var fillers = []string{
	"We write down the relation involving {N} and {W}.",
	"Substituting {N} gives an expression we can simplify directly.",
	"The condition on {W} restricts the possible cases.",
	"Collecting like terms leaves a single equation in one unknown.",
	"This is consistent with every constraint stated in the problem.",
	"Using {N} together with the earlier relation determines {W}.",
	"Rearranging, the unknown appears on one side only.",
	"No other case satisfies the conditions, so the value is determined.",
}

// solution is one simulated rollout.
type solution struct {
	content   string
	reasoning string
	finish    string
}

// rolloutSolution writes sample number sample of a problem. gold is "" when
// the problem is not in Config.Answers.
func (s *Server) rolloutSolution(problem, gold, sampleKey string, malformed bool) solution {
	return s.rolloutAt(problem, gold, sampleKey, malformed, s.problemCorrectRate(problem))
}

// rolloutAt is rolloutSolution correct at rate (loops.go: a simulated
// policy's rate, a refinement's).
func (s *Server) rolloutAt(problem, gold, sampleKey string, malformed bool, rate float64) solution {
	r := newRNG(key(s.cfg.Seed, "sample", problem, sampleKey))
	correct := gold != "" && r.chance(rate)
	truncated := r.chance(s.cfg.LengthRate)
	var answer string
	switch {
	case gold == "":
		answer = strconv.Itoa(r.intn(1000))
	case correct:
		answer = pick(r, correctForms(gold))
	default:
		answer = wrongForm(gold, r)
	}
	c := problemCues(problem)
	steps := 2 + r.intn(4)
	reasoning := fmt.Sprintf("The problem involves %s; I will set it up, work through it in %d steps, and check the result.", c.word(r), steps)

	var b strings.Builder
	if malformed {
		fmt.Fprintf(&b, "Let me think about %s. ", c.word(r))
		for range steps {
			b.WriteString(c.fill(r, pick(r, fillers)) + " ")
		}
		fmt.Fprintf(&b, "I believe the result is probably %s, but I have not finished checking.", answer)
		return solution{content: b.String(), reasoning: reasoning, finish: "stop"}
	}
	titles := r.perm(len(stepTitles))
	for i := range steps {
		fmt.Fprintf(&b, "### Step %d: %s\n", i+1, stepTitles[titles[i]])
		sentences := make([]string, 0, 4)
		for _, j := range r.perm(len(fillers))[:1+r.intn(3)] {
			sentences = append(sentences, c.fill(r, fillers[j]))
		}
		if i == 0 && s.cfg.RolloutChars > 0 {
			// its own generator, so that padding changes no other draw
			sentences = s.padToLength(newRNG(key(s.cfg.Seed, "pad", problem, sampleKey)), c, sentences)
		}
		if i == steps-1 {
			sentences = append(sentences, "Therefore the result is "+answer+".")
		}
		b.WriteString(strings.Join(sentences, " "))
		b.WriteString("\n\n")
	}
	if truncated {
		text := b.String()
		cut := len(text) * (40 + r.intn(40)) / 100
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		return solution{content: text[:cut], reasoning: reasoning, finish: "length"}
	}
	switch u := r.float(); {
	case u < 0.85:
		fmt.Fprintf(&b, "<answer>%s</answer>", answer)
	case u < 0.925:
		fmt.Fprintf(&b, "Hence the answer is $\\boxed{%s}$.", strings.Trim(answer, "$"))
	default:
		fmt.Fprintf(&b, "The final answer is %s", answer)
	}
	return solution{content: b.String(), reasoning: reasoning, finish: "stop"}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// padToLength adds filler sentences to a step until they hold about
// Config.RolloutChars bytes, for measurements at the lengths of real
// reasoning models' rollouts (16,384 tokens are ~65,000 characters).
func (s *Server) padToLength(r *rng, c cues, sentences []string) []string {
	n := 0
	for _, x := range sentences {
		n += len(x) + 1
	}
	for n < s.cfg.RolloutChars {
		x := c.fill(r, pick(r, fillers))
		sentences = append(sentences, x)
		n += len(x) + 1
	}
	return sentences
}

// problemCorrectRate is a problem's own chance of a correct rollout: with
// Plant.FewCorrect, a share of the problems is solved rarely (0.03 to
// 0.15); the others' mean is Config.CorrectRate: a quarter of the weight goes to
// problems that are always right or always wrong, the rest spreads evenly
// around the mean.
func (s *Server) problemCorrectRate(problem string) float64 {
	if p := s.cfg.Plant; p != nil && p.FewCorrect > 0 && unit(key(s.cfg.Seed, "few-correct", problem)) < p.FewCorrect {
		return 0.03 + 0.12*unit(key(s.cfg.Seed, "few-correct-rate", problem))
	}
	c := s.cfg.CorrectRate
	u := unit(key(s.cfg.Seed, "difficulty", problem))
	v := unit(key(s.cfg.Seed, "spread", problem))
	allRight, allWrong := 0.25*c, 0.25*(1-c)
	switch {
	case u < allRight:
		return 1
	case u < allRight+allWrong:
		return 0
	}
	spread := 1.8 * min(c, 1-c)
	return clamp01(c + (v-0.5)*spread)
}
