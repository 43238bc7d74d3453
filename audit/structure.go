package audit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/schema"
)

// Rules the audit adds to schema.RubricViolations' (see Rules for the
// order reports use).
const (
	RuleSpecVersion       = "spec_version"       // provenance.spec_version is not this tool's
	RuleDuplicateID       = "duplicate_id"       // a record id seen earlier in the corpus
	RuleNoProblem         = "no_problem"         // blank problem text
	RuleNoAnswer          = "no_answer"          // blank ground truth
	RuleDuplicateItem     = "duplicate_item"     // same text as an earlier item (case and spacing aside)
	RuleRolloutCounts     = "rollout_counts"     // n_correct or pass_rate disagree with the rollouts
	RuleRolloutIndex      = "rollout_index"      // a rollout index repeated
	RuleSatisfaction      = "satisfaction"       // a rollout's verdicts are not one per item in item order
	RuleEmpiricalMismatch = "empirical_mismatch" // stored sat_rate/corr/empirical_valid differ from the verdicts
)

// Rules lists every structural rule in the order reports use.
var Rules = append([]string{
	RuleSpecVersion, RuleDuplicateID, RuleNoProblem, RuleNoAnswer,
	schema.RuleStyle, schema.RuleNoItems, schema.RuleItemID, schema.RuleItemType, schema.RuleItemText, RuleDuplicateItem,
	schema.RulePolarity, schema.RuleWeight, schema.RuleSatRate, schema.RuleCorr,
	schema.RuleSuggest, schema.RuleAnswerCount, schema.RuleTooManyItems, schema.RuleItemCount,
	RuleRolloutCounts, RuleRolloutIndex, RuleSatisfaction, RuleEmpiricalMismatch,
}, GroundedRules...)

// violAcc counts and keeps violations.
type violAcc struct {
	total   int64
	records int64 // with at least one violation
	byRule  map[string]*RuleCount
	listed  []Violation
	// this record's rules, so a rule counts a record once
	current []string
	// rows of this file with a violation, ascending
	rows []int64
}

func (v *violAcc) beginRecord() { v.current = v.current[:0] }

func (v *violAcc) endRecord(row int64) {
	if len(v.current) > 0 {
		v.records++
		v.rows = append(v.rows, row)
	}
}

func (v *violAcc) add(x Violation, list int) {
	v.total++
	rc := v.byRule[x.Rule]
	if rc == nil {
		rc = &RuleCount{Rule: x.Rule}
		v.byRule[x.Rule] = rc
	}
	rc.Violations++
	if !slices.Contains(v.current, x.Rule) {
		v.current = append(v.current, x.Rule)
		rc.Records++
	}
	if list < 0 || len(v.listed) < list {
		v.listed = append(v.listed, x)
	}
}

// merge adds the violations of a later file; the listed ones stay in corpus order.
func (v *violAcc) merge(o *violAcc, list int) {
	v.total += o.total
	v.records += o.records
	for r, c := range o.byRule {
		w := v.byRule[r]
		if w == nil {
			w = &RuleCount{Rule: r}
			v.byRule[r] = w
		}
		w.Violations += c.Violations
		w.Records += c.Records
	}
	for _, x := range o.listed {
		if list >= 0 && len(v.listed) >= list {
			break
		}
		v.listed = append(v.listed, x)
	}
}

// violate records a broken rule of record r; item is nil for the record as a whole.
func (a *acc) violate(r *row, rowNum int64, item *int32, rule, format string, args ...any) {
	a.viol.add(Violation{RecordID: r.ID, ItemID: item, Rule: rule, Detail: fmt.Sprintf(format, args...),
		File: a.file, Row: rowNum, fileIdx: a.fileIdx}, a.set.list)
}

// readableSpecs names the record layouts this tool reads, for the
// spec_version rule's detail.
var readableSpecs = `"` + strings.Join(schema.ReadableSpecVersions, `" and "`) + `"`

// check runs the structural rules on one record.
func (a *acc) check(r *row, rowNum int64) {
	if v := r.Provenance.SpecVersion; !schema.ReadableSpec(v) {
		a.violate(r, rowNum, nil, RuleSpecVersion, "spec version %q; this tool reads %s", v, readableSpecs)
	}
	if strings.TrimSpace(r.Problem) == "" {
		a.violate(r, rowNum, nil, RuleNoProblem, "the problem text is blank")
	}
	if strings.TrimSpace(r.Answer) == "" {
		a.violate(r, rowNum, nil, RuleNoAnswer, "the ground truth is blank")
	}
	a.checkRubric(r, rowNum)
	a.checkRollouts(r, rowNum)
}

func (a *acc) checkRubric(r *row, rowNum int64) {
	items := make([]schema.Item, len(r.Rubric))
	for i := range r.Rubric {
		items[i] = r.Rubric[i].schemaItem()
	}
	for _, v := range schema.RubricViolations(r.Style, items, a.set.maxItems) {
		var id *int32
		if k := v.Err.Item; k > 0 {
			id = &r.Rubric[k-1].ID
		}
		detail := v.Err.Msg
		if v.Err.Field != "" && v.Rule != schema.RuleStyle {
			detail = v.Err.Field + " " + detail
		}
		a.violate(r, rowNum, id, v.Rule, "%s", detail)
	}
	for j := range r.Rubric {
		for i := range j {
			if sameText(r.Rubric[i].Text, r.Rubric[j].Text) && strings.TrimSpace(r.Rubric[j].Text) != "" {
				a.violate(r, rowNum, &r.Rubric[j].ID, RuleDuplicateItem, "same text as item %d", r.Rubric[i].ID)
				break
			}
		}
	}
}

// sameText compares two item texts ignoring case and runs of white space,
// without allocating.
func sameText(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		sa, sb := unicode.IsSpace(ra), unicode.IsSpace(rb)
		switch {
		case sa && sb:
			a, b = strings.TrimLeftFunc(a, unicode.IsSpace), strings.TrimLeftFunc(b, unicode.IsSpace)
			continue
		case sa != sb:
			return false
		case ra != rb && unicode.ToLower(ra) != unicode.ToLower(rb):
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b == ""
}

func (a *acc) checkRollouts(r *row, rowNum int64) {
	var correct int32
	seen := make(map[int32]bool, len(r.Rollouts))
	for i := range r.Rollouts {
		ro := &r.Rollouts[i]
		if ro.Correct {
			correct++
		}
		if seen[ro.Index] {
			a.violate(r, rowNum, nil, RuleRolloutIndex, "rollout index %d appears more than once", ro.Index)
		}
		seen[ro.Index] = true
	}
	n := len(r.Rollouts)
	if correct != r.NCorrect {
		a.violate(r, rowNum, nil, RuleRolloutCounts, "n_correct is %d; %d of the %d rollouts are correct", r.NCorrect, correct, n)
	}
	want := 0.0
	if n > 0 {
		want = float64(correct) / float64(n)
	}
	if d := r.PassRate - want; d > 1e-9 || d < -1e-9 {
		a.violate(r, rowNum, nil, RuleRolloutCounts, "pass_rate is %s; %d of the %d rollouts are correct (%s)", formatFloat(r.PassRate), correct, n, formatFloat(want))
	}
	for i := range r.Rollouts {
		ro := &r.Rollouts[i]
		if len(ro.Satisfaction) > 0 && !verdictsMatch(ro.Satisfaction, r.Rubric) {
			a.violate(r, rowNum, nil, RuleSatisfaction, "rollout %d has verdicts for items %s; the rubric's items are %s",
				ro.Index, idList(len(ro.Satisfaction), func(k int) int32 { return ro.Satisfaction[k].ID }),
				idList(len(r.Rubric), func(k int) int32 { return r.Rubric[k].ID }))
		}
	}
}

// verdictsMatch reports whether sat holds one verdict per rubric item, in item order.
func verdictsMatch(sat []satisfaction, rubric []item) bool {
	if len(sat) != len(rubric) {
		return false
	}
	for k := range sat {
		if sat[k].ID != rubric[k].ID {
			return false
		}
	}
	return true
}

// idList formats n ids as [1 2 3], eliding the middle of a long list.
func idList(n int, id func(int) int32) string {
	parts := make([]string, 0, 8)
	for k := range n {
		if n > 8 && k >= 4 && k < n-3 {
			if k == 4 {
				parts = append(parts, "...")
			}
			continue
		}
		parts = append(parts, strconv.Itoa(int(id(k))))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
