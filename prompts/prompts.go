// Package prompts holds the embedded prompt templates of every pipeline stage,
// renders them into chat messages through typed functions, and names each
// template by a content hash that goes into cache keys and provenance.
//
// A template file is a sequence of sections, each opened by a line
// "=== system ===", "=== user ===" or "=== assistant ===". Each section is a
// text/template of its own (actions cannot span section lines), so inputs that
// contain such lines stay inside their message. A directory given to Load
// overrides the embedded files of the same name; the others stay embedded.
//
// A section is rendered by a program compiled from its parse tree when it
// uses only the constructs the templates use (fastexec.go), with
// text/template as the reference and the fallback: the output is
// text/template's, byte for byte.
package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"text/template/parse"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

//go:embed templates/*.tmpl
var embedded embed.FS

// Template names, one per stage contract.
const (
	Rollout               = "rollout"
	DistillSRaR           = "distill_srar"
	DistillFactualProcess = "distill_factual_process"
	JudgeItem             = "judge_item"
	JudgeBatch            = "judge_batch"
	Satisfy               = "satisfy"
	Repair                = "repair"
	ScoreGrounded         = "score_grounded"
	// The grounded style's stage templates (seed 001).
	GroundedAnalyze    = "grounded_analyze"
	GroundedSynthesize = "grounded_synthesize"
	GroundedEnrich     = "grounded_enrich"
	GroundedJudgeBatch = "grounded_judge_batch"
	GroundedJudgeItem  = "grounded_judge_item"
	GroundedAnswer     = "grounded_answer"
	// Decompose asks for finer items in place of a saturated one
	// (distill refine --decompose).
	Decompose          = "decompose"
	GroundedAnswerOpen = "grounded_answer_open"
	// The judge templates' twins in the paper layout (Layout.Of).
	SatisfyPaper            = Satisfy + paperSuffix
	ScoreGroundedPaper      = ScoreGrounded + paperSuffix
	JudgeItemPaper          = JudgeItem + paperSuffix
	JudgeBatchPaper         = JudgeBatch + paperSuffix
	GroundedJudgeBatchPaper = GroundedJudgeBatch + paperSuffix
	GroundedJudgeItemPaper  = GroundedJudgeItem + paperSuffix
	// SatisfyGroup asks the satisfaction judge about every response of a
	// group in one request (judge.group, rewardd --judge-group).
	SatisfyGroup = "satisfy_group"
	// ScoreGroundedGroup asks the grounded judge about every response of a
	// group to one question in one request.
	ScoreGroundedGroup = "score_grounded_group"
)

// Names lists every template the toolkit needs.
var Names = []string{Rollout, DistillSRaR, DistillFactualProcess, JudgeItem, JudgeBatch, Satisfy, Repair, ScoreGrounded,
	GroundedAnalyze, GroundedSynthesize, GroundedEnrich, GroundedJudgeBatch, GroundedJudgeItem, GroundedAnswer, GroundedAnswerOpen, Decompose,
	SatisfyPaper, ScoreGroundedPaper, JudgeItemPaper, JudgeBatchPaper, GroundedJudgeBatchPaper, GroundedJudgeItemPaper, SatisfyGroup, ScoreGroundedGroup,
	Rubricator, RefineGuided, Elicit}

// Message is the chat message the templates render into: the client's own
// type, so rendered prompts go to llm.Client unchanged.
type Message = llm.Message

// Set is a loaded, parsed set of templates. It is safe for concurrent use.
type Set struct {
	templates map[string][]section
	hashes    map[string]string
	origins   map[string]string // the file each template came from, for errors
	// bufs holds *bytes.Buffer for rendering, reused so that a buffer grown
	// to a prompt's size is not grown again for the next one.
	bufs sync.Pool
	// fallbacks counts the renders of compiled sections that text/template
	// had to do (data the compiled program does not take; see fastexec.go).
	fallbacks atomic.Int64
}

// section is one message of a template: its role and its parsed body.
type section struct {
	role string
	body *template.Template
	// fixed is the message of a section without actions (a system prompt,
	// typically), rendered once when parsed; nil for the others.
	fixed *string
	// prog is the compiled body (fastexec.go) when the section has actions
	// and uses only what it compiles; nil otherwise.
	prog *program
}

// newSection parses a section's body and compiles it when it can.
func newSection(name, role, body string) (section, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(body)
	if err != nil {
		return section{}, err
	}
	sec := section{role: role, body: t, fixed: fixedText(t)}
	if sec.fixed == nil {
		sec.prog = compile(t)
	}
	return sec, nil
}

// execute writes the section's body for data to buf: through its program
// when it has one and the program can render this data, else (from an
// empty buf) through text/template. slow says text/template did it.
func (sec *section) execute(buf *bytes.Buffer, data any) (slow bool, err error) {
	if sec.prog != nil && sec.prog.execute(buf, data) {
		return false, nil
	}
	buf.Reset()
	return true, sec.body.Execute(buf, data)
}

// Load parses the embedded templates, with files NAME.tmpl in dir (if dir is
// not empty) taking the place of the embedded ones.
func Load(dir string) (*Set, error) {
	s := &Set{templates: map[string][]section{}, hashes: map[string]string{}, origins: map[string]string{}}
	for _, name := range Names {
		file := name + ".tmpl"
		text, err := fs.ReadFile(embedded, "templates/"+file)
		if err != nil {
			return nil, fmt.Errorf("prompts: embedded %s: %w", file, err)
		}
		origin := "embedded " + file
		if dir != "" {
			override := filepath.Join(dir, file)
			b, err := os.ReadFile(override)
			switch {
			case err == nil:
				text, origin = b, override
			case !errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("prompts: reading %s: %w", override, err)
			}
		}
		if err := s.parse(name, text, origin); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// funcs are the functions templates may call.
var funcs = template.FuncMap{
	"join": strings.Join,
	"inc":  func(i int) int { return i + 1 },
}

// LoadRollout is Load("") with the rollout template read from the file at
// path (in the format of Load's files): the prompt a run's own rollout
// template (its --prompts-dir) showed the model, for an export to show the
// policy the same.
func LoadRollout(path string) (*Set, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prompts: reading %s: %w", path, err)
	}
	s, err := Load("")
	if err != nil {
		return nil, err
	}
	if err := s.parse(Rollout, text, path); err != nil {
		return nil, err
	}
	return s, nil
}

// parse sets the named template from its file text; origin names the file
// in errors.
func (s *Set) parse(name string, text []byte, origin string) error {
	parts, err := cutSections(string(text))
	if err != nil {
		return fmt.Errorf("prompts: %s: %w", origin, err)
	}
	secs := make([]section, len(parts))
	for i, p := range parts {
		// Leading newlines keep the parser's line numbers those of the file.
		if secs[i], err = newSection(name, p.role, strings.Repeat("\n", p.line-1)+p.body); err != nil {
			return fmt.Errorf("prompts: parsing %s: %w", origin, err)
		}
	}
	s.templates[name] = secs
	s.hashes[name] = fmt.Sprintf("%016x", xxhash.Sum64(text))
	s.origins[name] = origin
	return nil
}

// Hash is the content hash of the named template (16 hex digits).
func (s *Set) Hash(name string) string { return s.hashes[name] }

// Solution is one labeled rollout shown to the distiller.
type Solution struct {
	Index   int
	Correct bool
	Text    string
}

// RolloutMessages asks for a step-formatted solution with the answer in tags.
func (s *Set) RolloutMessages(problem string) ([]Message, error) {
	return s.render(Rollout, struct{ Problem string }{problem})
}

// DistillSRaRMessages asks for SUGGEST/PITFALL/BONUS/ANSWER lines, contrasting
// correct and flawed solutions.
func (s *Set) DistillSRaRMessages(problem, answer string, solutions []Solution, maxItems int) ([]Message, error) {
	return s.render(DistillSRaR, struct {
		Problem, Answer string
		Solutions       []Solution
		MaxItems        int
	}{problem, answer, solutions, maxItems})
}

// DistillFactualProcessMessages asks for weighted Factual/Process criteria.
func (s *Set) DistillFactualProcessMessages(problem, reference, answer string) ([]Message, error) {
	return s.render(DistillFactualProcess, struct{ Problem, Reference, Answer string }{problem, reference, answer})
}

// DecomposeMessages asks for 2-3 finer items of item's type in place of
// item, which nearly every solution meets; solutions are the ones that
// meet it, marked correct or not.
func (s *Set) DecomposeMessages(problem, answer string, item schema.Item, solutions []Solution) ([]Message, error) {
	return s.render(Decompose, struct {
		Problem, Answer string
		Item            schema.Item
		Solutions       []Solution
	}{problem, answer, item, solutions})
}

// JudgeItemMessages asks whether one rubric item is valid (in the cache
// layout; JudgeItemMessagesIn for another).
func (s *Set) JudgeItemMessages(problem, answer string, item schema.Item) ([]Message, error) {
	return s.JudgeItemMessagesIn(LayoutCache, problem, answer, item)
}

// JudgeBatchMessages asks whether each of a problem's rubric items is valid
// (in the cache layout; JudgeBatchMessagesIn for another).
func (s *Set) JudgeBatchMessages(problem, answer string, items []schema.Item) ([]Message, error) {
	return s.JudgeBatchMessagesIn(LayoutCache, problem, answer, items)
}

// SatisfyMessages asks which rubric items a solution satisfies, and at which
// step, in the cache layout with the whole solution shown (SatisfyView for
// another view). The template's .Solution is the solution with each step
// opened by a <step n="K"> tag, K its position (see tagSteps): the judge
// names steps by K, the position reward.Steps numbers spans by. It is shown
// in its own block (.Boundary; see boundaryID), the templates' tags in it
// and in the final answer escaped.
func (s *Set) SatisfyMessages(problem, solution, finalAnswer string, items []schema.Item) ([]Message, error) {
	msgs, _, err := s.SatisfyView(View{Layout: LayoutCache}, problem, solution, finalAnswer, items)
	return msgs, err
}

// RepairMessages continues a conversation whose last reply failed to parse:
// the previous messages, the model's reply, and a request to fix parseErr.
func (s *Set) RepairMessages(previous []Message, reply string, parseErr error) ([]Message, error) {
	tail, err := s.render(Repair, struct{ Error string }{parseErr.Error()})
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(previous)+1+len(tail))
	out = append(out, previous...)
	out = append(out, Message{Role: "assistant", Content: reply})
	return append(out, tail...), nil
}

func (s *Set) render(name string, data any) ([]Message, error) {
	secs := s.templates[name]
	msgs := make([]Message, 0, len(secs))
	buf, _ := s.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer s.bufs.Put(buf)
	for _, sec := range secs {
		if sec.fixed != nil {
			msgs = append(msgs, Message{Role: sec.role, Content: *sec.fixed})
			continue
		}
		buf.Reset()
		slow, err := sec.execute(buf, data)
		if err != nil {
			return nil, fmt.Errorf("prompts: rendering %s: %w", name, err)
		}
		if slow && sec.prog != nil {
			s.fallbacks.Add(1)
		}
		msgs = append(msgs, Message{Role: sec.role, Content: string(bytes.TrimSpace(buf.Bytes()))})
	}
	return msgs, nil
}

// fixedText is the message a template renders whatever its data, when it
// has no actions (only text); nil otherwise.
func fixedText(t *template.Template) *string {
	if t.Tree == nil || t.Tree.Root == nil {
		return nil
	}
	var b strings.Builder
	for _, n := range t.Tree.Root.Nodes {
		text, ok := n.(*parse.TextNode)
		if !ok {
			return nil
		}
		b.Write(text.Text)
	}
	fixed := strings.TrimSpace(b.String())
	return &fixed
}

// part is one section of a template's text before parsing.
type part struct {
	role string
	line int    // line number of the body's first line in the file
	body string // raw template text up to the next section line
}

// cutSections cuts template text at "=== role ===" lines.
func cutSections(text string) ([]part, error) {
	var parts []part
	var body strings.Builder
	flush := func() {
		if len(parts) > 0 {
			parts[len(parts)-1].body = body.String()
		}
		body.Reset()
	}
	n := 0
	for line := range strings.Lines(text) {
		n++
		trimmed := strings.TrimSpace(line)
		if len(trimmed) >= len("=== ")+len(" ===") && strings.HasPrefix(trimmed, "=== ") && strings.HasSuffix(trimmed, " ===") {
			role := strings.TrimSpace(trimmed[4 : len(trimmed)-4])
			switch role {
			case "system", "user", "assistant":
			default:
				return nil, fmt.Errorf("line %d: unknown section role %q", n, role)
			}
			flush()
			parts = append(parts, part{role: role, line: n + 1})
			continue
		}
		if len(parts) == 0 {
			if trimmed == "" || strings.HasPrefix(trimmed, "{{/*") {
				continue
			}
			return nil, fmt.Errorf(`line %d: text before the first "=== user ===" (or system) section line`, n)
		}
		body.WriteString(line)
	}
	flush()
	if len(parts) == 0 {
		return nil, errors.New("no sections")
	}
	return parts, nil
}
