package corpus

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// The roles of a verl export's rows (--role): RLCER (seed 002) trains one
// policy in two roles, a reasoner that answers the problem and a
// rubricator that writes a rubric for the problem and one response. An
// export holds one role's rows, or both roles' (--role
// reasoner,rubricator: each record's reasoner row, then its rubricator
// row), so that a trainer samples both roles from one dataset; the ability
// column tells them apart. A rubricator row's reward comes from rewardd's
// /v1/score_group, where the rubricator's output is sent as a proposal
// with the problem's group of reasoner responses (docs/training-loops.md).
const (
	RoleReasoner   = "reasoner"
	RoleRubricator = "rubricator"
)

// ExportRoles lists the roles of --role, in the order a record's rows are
// written.
var ExportRoles = []string{RoleReasoner, RoleRubricator}

// roles are the roles of o.Role, in ExportRoles order; the reasoner alone
// when it is empty. Check has made sure the list is well formed.
func (o *ExportOptions) roles() []string {
	if o.Role == "" {
		return []string{RoleReasoner}
	}
	named := strings.Split(o.Role, ",")
	var out []string
	for _, r := range ExportRoles {
		if slices.Contains(named, r) {
			out = append(out, r)
		}
	}
	return out
}

// checkRoleList reports a malformed --role list: an unknown role, an
// empty entry or a role named twice.
func (o *ExportOptions) checkRoleList() error {
	if o.Role == "" {
		return nil
	}
	named := strings.Split(o.Role, ",")
	for i, r := range named {
		switch {
		case !slices.Contains(ExportRoles, r):
			return fmt.Errorf("--role %q: %q is not %s or %s (both: --role %s,%s)", o.Role, r, RoleReasoner, RoleRubricator, RoleReasoner, RoleRubricator)
		case slices.Contains(named[:i], r):
			return fmt.Errorf("--role %q names %s twice", o.Role, r)
		}
	}
	return nil
}

// checkRole reports the problems of Role and Hints.
func (o *ExportOptions) checkRole() error {
	if err := o.checkRoleList(); err != nil {
		return err
	}
	roles := o.roles()
	rubricator := slices.Contains(roles, RoleRubricator)
	switch {
	case rubricator && o.Format != FormatVerl:
		return fmt.Errorf("--role %s is for --format verl only: a rubricator row is a chat prompt, which only verl rows hold (verl, OpenRLHF, slime and TRL all read them)", o.Role)
	case o.Hints && o.Format != FormatVerl:
		return fmt.Errorf("--hints is for --format verl only: the hints go into the chat prompt")
	case o.Hints && rubricator:
		return fmt.Errorf("--hints is for the reasoner's rows: the rubricator writes the criteria")
	case !slices.Contains(roles, RoleReasoner) && o.UserTemplateFile != "":
		return fmt.Errorf("--user-template is the reasoner's prompt; the rubricator's is RLCER's rubricator prompt")
	}
	return nil
}

// exportRows are the rows rec makes in roles: its reasoner rows (one per
// question of a grounded record) and its rubricator row, which a math
// record with a stored rollout has (the rubricator is shown a response; a
// grounded passage has none).
func exportRows(format *exportFormat, roles []string, rec *schema.Record) []exportRow {
	var rows []exportRow
	for _, role := range roles {
		switch {
		case role == RoleReasoner:
			for _, view := range rowRecords(format, rec) {
				rows = append(rows, exportRow{rec: view, role: role})
			}
		case rec.Grounded == nil && len(rec.Rollouts) > 0:
			rows = append(rows, exportRow{rec: rec, role: role})
		}
	}
	return rows
}

// ability is a verl row's ability column: the role's name for a
// rubricator row, so that the trainer's reward function tells the roles
// apart.
func ability(role string) string {
	if role == RoleRubricator {
		return RoleRubricator
	}
	return verlAbility
}

// roleMessages is the prompt of rec in role.
func (p *promptSource) roleMessages(rec *schema.Record, role string) ([]ChatMessage, error) {
	if role == RoleRubricator {
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
// that an export without --role reads as before; both roles as
// "reasoner,rubricator".
func roleOf(roles []string) string {
	if len(roles) == 1 && roles[0] == RoleReasoner {
		return ""
	}
	return strings.Join(roles, ",")
}

// rows counts the rows a record written in roles made, per role, and the
// record when an export of both roles has no rubricator row of it.
func (s *exportStats) rows(roles []string, rows []exportRow) {
	rubricator := false
	for _, r := range rows {
		s.rowsByRole[r.role]++
		rubricator = rubricator || r.role == RoleRubricator
	}
	if len(roles) > 1 && !rubricator {
		s.noRubricatorRow++
	}
}

// rolesLine is the card's count of rows per role, for an export with
// --role: a record makes a row of each role it can, so rows are not
// records.
func (in cardInput) rolesLine(b *bytes.Buffer) {
	m := in.manifest
	if m.RowsByRole == nil {
		return
	}
	var parts []string
	for _, r := range ExportRoles {
		if n, ok := m.RowsByRole[r]; ok || slices.Contains(in.opt.roles(), r) {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	fmt.Fprintf(b, "Rows by role (RLCER's reasoner and rubricator; the `ability` column tells them apart): %s.", strings.Join(parts, ", "))
	if m.RecordsWithoutRubricatorRow > 0 {
		fmt.Fprintf(b, " %d records have a reasoner row only: no stored rollout to show the rubricator, or a grounded passage.", m.RecordsWithoutRubricatorRow)
	}
	b.WriteString("\n\n")
}
