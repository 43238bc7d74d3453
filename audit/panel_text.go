package audit

import (
	"fmt"
	"io"
	"strings"
)

// textJudgePanel writes the Judge panel section; nothing when no record
// had a panel.
func (r *Report) textJudgePanel(w io.Writer) {
	p := r.JudgePanel
	if p == nil {
		return
	}
	heading(w, "Judge panel: %s records judged by %s", num(p.Records), p.panelSize())
	indented(w, "the stored verdicts are the panel's: a strict majority, a judge that failed counting as a vote "+
		"against and a tie as no; each judge's agreement is with the panel's verdict, over the verdicts it gave")
	t := newTable("judge", "stage", "model", "records").leftAlign(1, 2)
	for _, m := range p.Judges {
		t.add(m.Name, m.Stage, m.Model, num(m.Records))
	}
	t.write(w)
	for _, kind := range []struct {
		name, rate string
		v          *PanelVerdicts
	}{{"validity (rubric items)", "valid", p.Validity}, {"satisfaction (rollouts x items)", "satisfied", p.Satisfaction},
		{"validity (grounded criteria)", "valid", p.Criteria}} {
		if kind.v != nil {
			kind.v.text(w, kind.name, kind.rate)
		}
	}
}

func (v *PanelVerdicts) text(w io.Writer, name, rate string) {
	fmt.Fprintln(w)
	line := fmt.Sprintf("  %s: %s panel verdicts", name, num(v.Verdicts))
	if v.RuleMismatches > 0 {
		line += fmt.Sprintf("; %s stored verdicts are not the majority of the stored votes", num(v.RuleMismatches))
	}
	fmt.Fprintln(w, clip(line))
	t := newTable("judge", "answered", "failed", "agreement with panel", "kappa")
	for _, j := range v.Judges {
		t.add(j.Judge, num(j.Answered), num(j.Failed), pct(j.Agreement), fix(j.Kappa, 2))
	}
	t.write(w)
	if v.People != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "  each judge against people's labels (--human), people taken as the truth")
		t = newTable("judge", "labelled", "sensitivity", "specificity")
		for _, j := range v.People {
			t.add(j.Judge, num(j.Labelled), pctCount(j.Sensitivity, j.Table.ValidValid, j.Table.PeopleValid()),
				pctCount(j.Specificity, j.Table.InvalidInvalid, j.Table.PeopleInvalid()))
		}
		t.write(w)
	}
	fmt.Fprintln(w)
	writeKappas(w, "verdicts", v.InterJudge)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %s rates with 95%% Wilson intervals (a judge's over the verdicts it gave)\n", rate)
	writeRates(w, rate+": panel", v.Rates)
}

// panelSize is "a panel of 3 judges", or the size by stage when the
// stages' panels differ ("panels of 3 judges (judge) and 1 judge
// (empirical)").
func (p *JudgePanel) panelSize() string {
	var stages []string
	count := map[string]int{}
	for _, m := range p.Judges {
		if count[m.Stage] == 0 {
			stages = append(stages, m.Stage)
		}
		count[m.Stage]++
	}
	judges := func(n int) string {
		if n == 1 {
			return "1 judge"
		}
		return fmt.Sprintf("%d judges", n)
	}
	same := true
	for _, s := range stages {
		same = same && count[s] == count[stages[0]]
	}
	if len(stages) == 0 || same {
		n := 0
		if len(stages) > 0 {
			n = count[stages[0]]
		}
		return "a panel of " + judges(n)
	}
	var parts []string
	for _, s := range stages {
		parts = append(parts, fmt.Sprintf("%s (%s)", judges(count[s]), s))
	}
	return "panels of " + strings.Join(parts, " and ")
}
