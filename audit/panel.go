package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/schema"
)

// JudgePanel is validate's "Judge panel" section, from the records whose
// stages asked a panel of judges (Record.Panel): who judged, how much the
// judges agree with each other (Fleiss' kappa, by item type), each judge's
// agreement with the panel's verdicts and its failures, and the rates with
// 95% Wilson intervals, the panel's next to each judge's. The panel's
// verdicts are the ones stored in the records (Item.Valid, the rollouts'
// satisfaction, Criterion.Valid). Null when no record has a panel (older
// corpora, and runs whose stages had one judge each).
type JudgePanel struct {
	Records int64         `json:"records"` // records with a panel
	Rule    string        `json:"rule"`
	Judges  []PanelMember `json:"judges"`
	// Validity: the validity judge's panel on rubric items (math styles);
	// Satisfaction: the empirical stage's panel on each rollout's items;
	// Criteria: the validity judge's panel on grounded criteria, by
	// position. Each null when no record has such verdicts.
	Validity     *PanelVerdicts `json:"validity"`
	Satisfaction *PanelVerdicts `json:"satisfaction"`
	Criteria     *PanelVerdicts `json:"criteria"`
}

// PanelMember is one judge of the corpus's panels and the records it is
// named in.
type PanelMember struct {
	Name    string `json:"name"`
	Stage   string `json:"stage"`
	Model   string `json:"model"`
	Records int64  `json:"records"`
}

// PanelVerdicts are the figures of one kind of panel verdict.
type PanelVerdicts struct {
	// Verdicts counts the panel's verdicts with the judges' votes stored.
	Verdicts int64 `json:"verdicts"`
	// RuleMismatches counts stored verdicts that are not the strict
	// majority of the stored votes (a record edited by hand, or written by
	// another rule); 0 in a corpus distill run wrote.
	RuleMismatches int64                 `json:"rule_mismatches"`
	InterJudge     []KappaFigure         `json:"inter_judge"` // all types first
	Judges         []PanelJudgeAgreement `json:"judges"`
	Rates          []TypeValidRates      `json:"rates"` // valid (satisfied) rates, all types first
	// People holds each judge's sensitivity and specificity against
	// people's labels (validate --human), validity only; null without a
	// sheet.
	People []JudgeVsPeople `json:"people"`
	kind   string          // what is judged, for the page
}

// PanelJudgeAgreement is one judge's agreement with the panel's verdicts
// over those it answered, and the verdicts it failed to give.
type PanelJudgeAgreement struct {
	Judge     string   `json:"judge"`
	Answered  int64    `json:"answered"`
	Failed    int64    `json:"failed"`
	Agreement *float64 `json:"agreement_with_panel"`
	Kappa     *float64 `json:"kappa_with_panel"`
}

// JudgeVsPeople is one judge's verdicts against people's on the sheet's
// items it answered, people taken as the truth and "valid" as the positive
// class (as the reliability section's).
type JudgeVsPeople struct {
	Judge       string           `json:"judge"`
	Labelled    int64            `json:"labelled"`
	Table       judgestats.Table `json:"confusion"`
	Sensitivity *float64         `json:"sensitivity"`
	Specificity *float64         `json:"specificity"`
}

// panelAcc accumulates the Judge panel section.
type panelAcc struct {
	records                          int64
	members                          []PanelMember
	validity, satisfaction, criteria *verdictTally
	mismatches                       [3]int64
	people                           map[panelKey]bool // people's verdicts by item; nil without a sheet
	vsPeople                         map[string]*judgestats.Table
	peopleOrder                      []string
}

// panelKey names a rubric item of a record.
type panelKey struct {
	record string
	item   int32
}

func newPanelAcc() *panelAcc {
	return &panelAcc{validity: newVerdictTally(), satisfaction: newVerdictTally(), criteria: newVerdictTally()}
}

// judgePanel reads the panels of in's records; nil when no record has one.
// It reads each file's panel judges' names first (a Parquet shard written
// before panels has no such column and is not read at all), and the rest of
// a record, its rubric and rollouts, only in a file where some record has a
// panel: most corpora have none, and the section then costs a read of one
// small column. people are the annotation sheet's rows matched with the
// corpus (Other: people's verdict), for each judge's sensitivity and
// specificity.
func judgePanel(ctx context.Context, in *Input, people []ComparedItem) (*JudgePanel, error) {
	if in.Format == FormatVerl {
		return nil, nil
	}
	a := newPanelAcc()
	if people != nil {
		a.people, a.vsPeople = map[panelKey]bool{}, map[string]*judgestats.Table{}
		for _, p := range people {
			a.people[panelKey{p.RecordID, p.ItemID}] = p.Other
		}
	}
	seen := map[string]bool{}
	for i, f := range in.Files {
		// A file the first pass could not read is listed there already;
		// only a cancellation stops this pass.
		rows, err := rowsWithPanel(ctx, in, i)
		if len(rows) > 0 && ctx.Err() == nil {
			err = addPanels(ctx, f, in.Format, rows, seen, a)
		}
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return a.section(), nil
}

// rowsWithPanel is the set of the rows of file i of in (numbered from 1,
// as scanFile counts them) whose record has a panel, as far as the file
// could be read: of a Parquet file, from one column, the panel judges'
// names (none when the file has no such column, written before panels).
func rowsWithPanel(ctx context.Context, in *Input, i int) (map[int64]bool, error) {
	cf, ok, err := in.Columns(i)
	if err != nil {
		return nil, err
	}
	if !ok {
		return jsonlRowsWithPanel(ctx, in.Files[i], in.Format)
	}
	defer func() { _ = cf.Close() }() // only read: closing loses nothing
	if !cf.HasField("panel") {
		return nil, nil
	}
	col, err := cf.Column("panel", "judges", "list", "element", "name")
	if err != nil {
		return nil, err
	}
	defer func() { _ = col.Close() }() // only read: closing loses nothing
	rows := map[int64]bool{}
	var vals []parquet.Value
	for row := int64(1); ; row++ {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		vals, err = col.Row(vals[:0])
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		if vals[0].DefinitionLevel() >= col.Defined(1) {
			rows[row] = true
		}
	}
}

// panelProbe is what rowsWithPanel decodes of a JSONL record: whether it
// has a panel.
type panelProbe struct {
	Panel *struct{} `json:"panel"`
}

func jsonlRowsWithPanel(ctx context.Context, f File, format string) (map[int64]bool, error) {
	rows := map[int64]bool{}
	_, err := scanFile(f, format, func(*schema.Label, string) panelProbe { return panelProbe{} }, func(p *panelProbe, row int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if p.Panel != nil {
			rows[row] = true
		}
		return nil
	}, func(Problem) {})
	return rows, err
}

// errPanelsRead stops addPanels' scan after the last row it wants.
var errPanelsRead = errors.New("every panel of the file read")

// addPanels adds to a the panels of f's rows numbered in rows, but of a
// record whose panel an earlier row gave (seen, by record id).
func addPanels(ctx context.Context, f File, format string, rows map[int64]bool, seen map[string]bool, a *panelAcc) error {
	left := len(rows)
	_, err := scanFile(f, format, func(*schema.Label, string) panelRow { return panelRow{} }, func(r *panelRow, row int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !rows[row] {
			return nil
		}
		if !seen[r.ID] && r.Panel != nil {
			seen[r.ID] = true
			a.add(r)
		}
		if left--; left == 0 {
			return errPanelsRead
		}
		return nil
	}, func(Problem) {})
	if errors.Is(err, errPanelsRead) {
		return nil
	}
	return err
}

// panelRow is what the panel section reads of a record.
type panelRow struct {
	ID       string         `parquet:"id" json:"id"`
	Rubric   []panelItemRow `parquet:"rubric,list" json:"rubric"`
	Rollouts []panelRollout `parquet:"rollouts,list" json:"rollouts"`
	Grounded *panelGrounded `parquet:"grounded,optional" json:"grounded"`
	Panel    *schema.Panel  `parquet:"panel,optional" json:"panel"`
}

type panelItemRow struct {
	ID       int32   `parquet:"id" json:"id"`
	Type     string  `parquet:"type" json:"type"`
	Weight   float64 `parquet:"weight" json:"weight"`
	Polarity int32   `parquet:"polarity" json:"polarity"`
	Valid    *bool   `parquet:"valid,optional" json:"valid,omitempty"`
}

type panelRollout struct {
	Index        int32          `parquet:"index" json:"index"`
	Satisfaction []satisfaction `parquet:"satisfaction,list" json:"satisfaction"`
}

type panelGrounded struct {
	Questions []panelQuestion `parquet:"questions,list" json:"questions"`
}

type panelQuestion struct {
	Index    int32            `parquet:"index" json:"index"`
	Criteria []panelCriterion `parquet:"criteria,list" json:"criteria"`
}

type panelCriterion struct {
	ID    string `parquet:"id" json:"id"`
	Valid *bool  `parquet:"valid,optional" json:"valid,omitempty"`
}

func (a *panelAcc) add(r *panelRow) {
	a.records++
	for _, m := range r.Panel.Judges {
		i := slices.IndexFunc(a.members, func(p PanelMember) bool { return p.Name == m.Name && p.Stage == m.Stage && p.Model == m.Model })
		if i < 0 {
			a.members = append(a.members, PanelMember{Name: m.Name, Stage: m.Stage, Model: m.Model})
			i = len(a.members) - 1
		}
		a.members[i].Records++
	}
	a.addValidity(r)
	a.addSatisfaction(r)
	a.addCriteria(r)
}

// votesOf turns stored per-judge verdicts into votes, nil Valid a failure.
func votesOf(verdicts []schema.JudgeVerdict) []judgeVote {
	out := make([]judgeVote, len(verdicts))
	for i, v := range verdicts {
		out[i] = judgeVote{judge: v.Judge, vote: judgestats.Vote{OK: v.Valid != nil, Yes: v.Valid != nil && *v.Valid}}
	}
	return out
}

// tallyStored tallies one stored panel verdict and says whether it breaks the
// rule: judgestats.Majority of the votes, or for a satisfaction verdict
// (negative set for a PITFALL or negative weight) judgestats.Met.
func tallyStored(t *verdictTally, typ string, stored bool, votes []judgeVote, rule func([]judgestats.Vote) bool) int64 {
	t.add(typ, nil, stored, votes)
	plain := make([]judgestats.Vote, len(votes))
	for i, v := range votes {
		plain[i] = v.vote
	}
	if rule(plain) != stored {
		return 1
	}
	return 0
}

func (a *panelAcc) addValidity(r *panelRow) {
	for _, iv := range r.Panel.Validity {
		k := slices.IndexFunc(r.Rubric, func(it panelItemRow) bool { return it.ID == iv.ItemID })
		if k < 0 || r.Rubric[k].Valid == nil {
			continue
		}
		votes := votesOf(iv.Verdicts)
		a.mismatches[0] += tallyStored(a.validity, r.Rubric[k].Type, *r.Rubric[k].Valid, votes, judgestats.Majority)
		a.addPeople(panelKey{r.ID, iv.ItemID}, votes)
	}
}

// addPeople counts each judge's vote on an item people labelled.
func (a *panelAcc) addPeople(k panelKey, votes []judgeVote) {
	truth, labelled := a.people[k]
	if !labelled {
		return
	}
	for _, v := range votes {
		t := a.vsPeople[v.judge]
		if t == nil {
			t = &judgestats.Table{}
			a.vsPeople[v.judge] = t
			a.peopleOrder = append(a.peopleOrder, v.judge)
		}
		if v.vote.OK {
			t.Add(truth, v.vote.Yes)
		}
	}
}

// peopleFigures are each judge's figures against people; nil without a
// sheet.
func (a *panelAcc) peopleFigures() []JudgeVsPeople {
	if a.vsPeople == nil {
		return nil
	}
	out := []JudgeVsPeople{}
	for _, name := range a.peopleOrder {
		t := *a.vsPeople[name]
		j := JudgeVsPeople{Judge: name, Labelled: t.Labelled(), Table: t}
		if se, ok := t.Sensitivity(); ok {
			j.Sensitivity = &se
		}
		if sp, ok := t.Specificity(); ok {
			j.Specificity = &sp
		}
		out = append(out, j)
	}
	return out
}

func (a *panelAcc) addSatisfaction(r *panelRow) {
	for _, rv := range r.Panel.Satisfaction {
		k := slices.IndexFunc(r.Rollouts, func(ro panelRollout) bool { return ro.Index == rv.Rollout })
		if k < 0 {
			continue
		}
		for _, s := range r.Rollouts[k].Satisfaction {
			it := slices.IndexFunc(r.Rubric, func(it panelItemRow) bool { return it.ID == s.ID })
			if it < 0 {
				continue
			}
			votes := make([]judgeVote, len(rv.Judges))
			for j, js := range rv.Judges {
				votes[j] = judgeVote{judge: js.Judge}
				if js.Failed {
					continue
				}
				if at := slices.IndexFunc(js.Satisfaction, func(x schema.Satisfaction) bool { return x.ID == s.ID }); at >= 0 {
					votes[j].vote = judgestats.Vote{OK: true, Yes: js.Satisfaction[at].Satisfied}
				}
			}
			negative := r.Rubric[it].Polarity < 0 || r.Rubric[it].Weight < 0
			met := func(v []judgestats.Vote) bool { return judgestats.Met(v, negative) }
			a.mismatches[1] += tallyStored(a.satisfaction, r.Rubric[it].Type, s.Satisfied, votes, met)
		}
	}
}

func (a *panelAcc) addCriteria(r *panelRow) {
	if r.Grounded == nil {
		return
	}
	for _, cv := range r.Panel.Criteria {
		q := slices.IndexFunc(r.Grounded.Questions, func(q panelQuestion) bool { return q.Index == cv.Question })
		if q < 0 {
			continue
		}
		crit := r.Grounded.Questions[q].Criteria
		c := slices.IndexFunc(crit, func(c panelCriterion) bool { return c.ID == cv.CriterionID })
		if c < 0 || crit[c].Valid == nil {
			continue
		}
		a.mismatches[2] += tallyStored(a.criteria, fmt.Sprintf("criterion %d", c+1), *crit[c].Valid, votesOf(cv.Verdicts), judgestats.Majority)
	}
}

// section is the accumulated section; nil without a panel.
func (a *panelAcc) section() *JudgePanel {
	if a.records == 0 {
		return nil
	}
	validity := verdictsOf(a.validity, a.mismatches[0], "Validity of rubric items")
	if validity != nil {
		validity.People = a.peopleFigures()
	}
	return &JudgePanel{Records: a.records, Rule: PanelRule, Judges: a.members,
		Validity:     validity,
		Satisfaction: verdictsOf(a.satisfaction, a.mismatches[1], "Satisfaction (rollouts x items)"),
		Criteria:     verdictsOf(a.criteria, a.mismatches[2], "Validity of grounded criteria")}
}

// verdictsOf is the figures of one tally; nil when it counted nothing.
func verdictsOf(t *verdictTally, mismatches int64, kind string) *PanelVerdicts {
	all := t.byType["all"]
	if all == nil {
		return nil
	}
	pv := &PanelVerdicts{Verdicts: all.panel.Of, RuleMismatches: mismatches, InterJudge: t.interJudge(), Rates: t.validRates(), kind: kind}
	for _, name := range t.judges {
		ag := t.agreement(name, false)
		j := PanelJudgeAgreement{Judge: name, Agreement: ag.Rate, Kappa: ag.Kappa}
		j.Answered, j.Failed = t.answered(name)
		pv.Judges = append(pv.Judges, j)
	}
	return pv
}
