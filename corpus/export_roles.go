package corpus

import (
	"fmt"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// The roles of a verl export's rows (--role): RLCER (seed 002) trains one
// policy in two roles, a reasoner that answers the problem and a
// rubricator that writes a rubric for the problem and one response. An
// export holds one role's rows; a trainer samples both roles from one
// dataset by listing both exports' files (verl's data.train_files, one
// datasets.load_dataset over both). A rubricator row's reward comes from
// rewardd's /v1/score_group, where the rubricator's output is sent as a
// proposal with the problem's group of reasoner responses
// (docs/training-loops.md).
const (
	RoleReasoner   = "reasoner"
	RoleRubricator = "rubricator"
)

// ExportRoles lists the roles of --role.
var ExportRoles = []string{RoleReasoner, RoleRubricator}

// checkRole reports the problems of Role and Hints.
func (o *ExportOptions) checkRole() error {
	switch {
	case o.Role != "" && o.Role != RoleReasoner && o.Role != RoleRubricator:
		return fmt.Errorf("--role %q is not %s or %s", o.Role, RoleReasoner, RoleRubricator)
	case o.Role == RoleRubricator && o.Format != FormatVerl:
		return fmt.Errorf("--role rubricator is for --format verl only: its rows are chat prompts")
	case o.Hints && o.Format != FormatVerl:
		return fmt.Errorf("--hints is for --format verl only: the hints go into the chat prompt")
	case o.Hints && o.Role == RoleRubricator:
		return fmt.Errorf("--hints is for the reasoner's rows: the rubricator writes the criteria")
	case o.Role == RoleRubricator && o.UserTemplateFile != "":
		return fmt.Errorf("--user-template is the reasoner's prompt; the rubricator's is RLCER's rubricator prompt")
	}
	return nil
}

// ability is a verl row's ability column: the role's name for a
// rubricator row, so that the trainer's reward function tells the roles
// apart.
func (p *promptSource) ability() string {
	if p.role == RoleRubricator {
		return RoleRubricator
	}
	return verlAbility
}

// roleMessages is the prompt of rec in the export's role.
func (p *promptSource) roleMessages(rec *schema.Record) ([]ChatMessage, error) {
	if p.role == RoleRubricator && rec.Grounded == nil {
		return p.rubricatorMessages(rec)
	}
	msgs, err := p.messages(rec)
	if err != nil || !p.hints || rec.Grounded != nil {
		return msgs, err
	}
	hints := prompts.Hints(rec.Rubric)
	if hints == "" || len(msgs) == 0 {
		return msgs, nil
	}
	last := &msgs[len(msgs)-1]
	last.Content += "\n\n" + hints
	return msgs, nil
}

// rubricatorMessages is RLCER's rubricator prompt for rec and one of its
// stored rollouts: the first flawed one (the rubricator's job is to find
// room to improve), else the first.
func (p *promptSource) rubricatorMessages(rec *schema.Record) ([]ChatMessage, error) {
	if len(rec.Rollouts) == 0 {
		return nil, fmt.Errorf("record %s has no stored rollout: a rubricator row shows the rubricator a response (export rubricator rows from a run directory, or a jsonl export, which keep the rollouts)", rec.ID)
	}
	ro := rec.Rollouts[0]
	for _, r := range rec.Rollouts {
		if !r.Correct {
			ro = r
			break
		}
	}
	rendered, err := p.rollout.RubricatorMessages(rec.Problem, ro.Text)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", rec.ID, err)
	}
	var msgs []ChatMessage
	if p.system != "" {
		msgs = append(msgs, ChatMessage{Role: roleSystem, Content: p.system})
	}
	for _, m := range rendered {
		msgs = append(msgs, ChatMessage{Role: m.Role, Content: m.Content})
	}
	return msgs, nil
}

// roleOf is the role export.json names: none for the reasoner's rows, so
// that an export without --role reads as before.
func roleOf(role string) string {
	if role == RoleReasoner {
		return ""
	}
	return role
}

// hasResponse reports whether rec can make a row of role: a rubricator row
// needs a stored rollout to show (a record without one is dropped, and
// counted in records_dropped).
func hasResponse(role string, rec *schema.Record) bool {
	return role != RoleRubricator || rec.Grounded != nil || len(rec.Rollouts) > 0
}
