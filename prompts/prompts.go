// Package prompts holds the embedded prompt templates of every pipeline stage,
// renders them into chat messages through typed functions, and names each
// template by a content hash that goes into cache keys and provenance.
//
// A template file is a sequence of sections, each opened by a line
// "=== system ===", "=== user ===" or "=== assistant ===", and rendered with
// text/template. A directory given to Load overrides the embedded files of the
// same name; the others stay embedded.
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
	"text/template"

	"github.com/cespare/xxhash/v2"

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
)

// Names lists every template the toolkit needs.
var Names = []string{Rollout, DistillSRaR, DistillFactualProcess, JudgeItem, JudgeBatch, Satisfy, Repair}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Set is a loaded, parsed set of templates. It is safe for concurrent use.
type Set struct {
	templates map[string]*template.Template
	hashes    map[string]string
}

// Load parses the embedded templates, with files NAME.tmpl in dir (if dir is
// not empty) taking the place of the embedded ones.
func Load(dir string) (*Set, error) {
	s := &Set{templates: map[string]*template.Template{}, hashes: map[string]string{}}
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
		t, err := template.New(name).Option("missingkey=error").Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("prompts: parsing %s: %w", origin, err)
		}
		if _, err := splitSections(string(text)); err != nil {
			return nil, fmt.Errorf("prompts: %s: %w", origin, err)
		}
		s.templates[name] = t
		s.hashes[name] = fmt.Sprintf("%016x", xxhash.Sum64(text))
	}
	return s, nil
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

// JudgeItemMessages asks whether one rubric item is valid.
func (s *Set) JudgeItemMessages(problem, answer string, item schema.Item) ([]Message, error) {
	return s.render(JudgeItem, struct {
		Problem, Answer string
		Item            schema.Item
	}{problem, answer, item})
}

// JudgeBatchMessages asks whether each of a problem's rubric items is valid.
func (s *Set) JudgeBatchMessages(problem, answer string, items []schema.Item) ([]Message, error) {
	return s.render(JudgeBatch, struct {
		Problem, Answer string
		Items           []schema.Item
	}{problem, answer, items})
}

// SatisfyMessages asks which rubric items a solution satisfies, and at which step.
func (s *Set) SatisfyMessages(problem, solution, finalAnswer string, items []schema.Item) ([]Message, error) {
	return s.render(Satisfy, struct {
		Problem, Solution, FinalAnswer string
		Items                          []schema.Item
	}{problem, solution, finalAnswer, items})
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
	var buf bytes.Buffer
	if err := s.templates[name].Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("prompts: rendering %s: %w", name, err)
	}
	return splitSections(buf.String())
}

// splitSections cuts rendered text at "=== role ===" lines into messages.
func splitSections(text string) ([]Message, error) {
	var msgs []Message
	var cur *Message
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.Content = strings.TrimSpace(body.String())
			msgs = append(msgs, *cur)
		}
		body.Reset()
	}
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "=== ") && strings.HasSuffix(trimmed, " ===") {
			role := strings.TrimSpace(trimmed[4 : len(trimmed)-4])
			switch role {
			case "system", "user", "assistant":
			default:
				return nil, fmt.Errorf("unknown section role %q", role)
			}
			flush()
			cur = &Message{Role: role}
			continue
		}
		if cur == nil {
			if trimmed == "" || strings.HasPrefix(trimmed, "{{/*") {
				continue
			}
			return nil, errors.New(`text before the first "=== user ===" (or system) section line`)
		}
		body.WriteString(line)
	}
	flush()
	if len(msgs) == 0 {
		return nil, errors.New("no sections")
	}
	return msgs, nil
}
