package corpus

import (
	"fmt"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// promptSource decides the verl prompt: what the policy sees. The policy
// must be asked for the format the rollouts were asked for (SRaR's format
// reward checks the "### Step N:" headers and the answer tag), so by default
// a math record's prompt is the rollout template its rollouts were sampled
// with, known by the template hash in its provenance. --user-template names
// that template's file when it is not this build's (a run's --prompts-dir);
// --system-prompt alone replaces it with a system message and the bare
// problem.
type promptSource struct {
	hints    bool // ExportOptions.Hints
	system   string
	rollout  *prompts.Set // this build's templates, or with --user-template's rollout
	userFile string       // --user-template, "" when not given
}

func newPromptSource(opt *ExportOptions) (*promptSource, error) {
	p := &promptSource{hints: opt.Hints, system: opt.SystemPrompt, userFile: opt.UserTemplateFile}
	var err error
	if p.userFile != "" {
		p.rollout, err = prompts.LoadRollout(p.userFile)
	} else {
		p.rollout, err = prompts.Load("")
	}
	if err != nil {
		return nil, fmt.Errorf("--user-template: %w", err)
	}
	if _, err := p.rollout.RolloutMessages("a problem"); err != nil {
		return nil, fmt.Errorf("--user-template %s: %w", p.userFile, err)
	}
	return p, nil
}

// messages is the prompt of rec. It is built from the problem and the
// templates only, so it never holds the rubric, the reference or the ground
// truth.
func (p *promptSource) messages(rec *schema.Record) ([]ChatMessage, error) {
	var msgs []ChatMessage
	if p.system != "" {
		msgs = append(msgs, ChatMessage{Role: roleSystem, Content: p.system})
	}
	sampled := rec.Provenance.RolloutTemplate
	useTemplate := p.userFile != "" ||
		(p.system == "" && sampled != "" && (rec.Style == schema.StyleSRaR || rec.Style == schema.StyleFactualProcess))
	if !useTemplate {
		return append(msgs, ChatMessage{Role: roleUser, Content: rec.Problem}), nil
	}
	if p.userFile == "" && sampled != p.rollout.Hash(prompts.Rollout) {
		return nil, fmt.Errorf("record %s: its rollouts were sampled with rollout template %s, which this build does not have "+
			"(a run's --prompts-dir, or another version; this build's is %s): give that template with --user-template "+
			"(e.g. PROMPTS_DIR/rollout.tmpl), or --system-prompt to ask for the answer format in a system message",
			rec.ID, sampled, p.rollout.Hash(prompts.Rollout))
	}
	rendered, err := p.rollout.RolloutMessages(rec.Problem)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", rec.ID, err)
	}
	for _, m := range rendered {
		msgs = append(msgs, ChatMessage{Role: m.Role, Content: m.Content})
	}
	return msgs, nil
}

// question is the prompt of a grounded question: the --system-prompt
// message if given, then the question alone (never the passage, the
// criteria or the rationale: the policy answers closed-book).
func (p *promptSource) question(q string) []ChatMessage {
	var msgs []ChatMessage
	if p.system != "" {
		msgs = append(msgs, ChatMessage{Role: roleSystem, Content: p.system})
	}
	return append(msgs, ChatMessage{Role: roleUser, Content: q})
}
