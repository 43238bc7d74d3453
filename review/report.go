package review

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rubricforge/rubricforge/audit"
)

// Report is what `validate` says of a corpus's review: how much of it
// people decided, and how their verdicts agree with the validity judge's
// and with each other's (Cohen's kappa, overall and by item type). A
// reviewer's verdict is "valid" when they accepted the item as written;
// a reject or an edit says it was not.
type Report struct {
	Logs      []string           `json:"logs"`
	Items     int                `json:"items"`   // items in the corpus under review
	Covered   int                `json:"covered"` // items at least one reviewer decided
	Reviewers []ReviewerCoverage `json:"reviewers"`
	// VsJudge holds one agreement per reviewer: the stored judge's
	// verdicts against theirs, on the items both judged.
	VsJudge []*audit.Agreement `json:"vs_judge"`
	// Between holds one agreement per pair of reviewers, on the items both
	// decided.
	Between   []*audit.Agreement `json:"between_reviewers"`
	Conflicts int                `json:"conflicts"`
}

// ReviewerCoverage is one reviewer's decisions.
type ReviewerCoverage struct {
	Reviewer string `json:"reviewer"`
	Decided  int    `json:"decided"`
	Accepted int    `json:"accepted"`
	Rejected int    `json:"rejected"`
	Edited   int    `json:"edited"`
	Flagged  int    `json:"flagged_records"`
}

// Summarize reports the decisions d on the corpus c.
func Summarize(c *Corpus, d *Decisions) *Report {
	r := &Report{Logs: d.Logs, Items: c.Items(), VsJudge: []*audit.Agreement{}, Between: []*audit.Agreement{}, Reviewers: []ReviewerCoverage{}}
	r.Conflicts = len(d.Conflicts())
	covered := map[ItemKey]bool{}
	for _, s := range d.States {
		cov := ReviewerCoverage{Reviewer: s.Reviewer, Flagged: len(s.Flagged)}
		var pairs []audit.VerdictPair
		for k, e := range s.Items {
			it := c.item(k)
			if it == nil {
				continue // not in this corpus (any more)
			}
			covered[k] = true
			cov.Decided++
			switch e.Action {
			case ActionAccept:
				cov.Accepted++
			case ActionReject:
				cov.Rejected++
			case ActionEdit:
				cov.Edited++
			}
			if it.Valid != nil {
				pairs = append(pairs, audit.VerdictPair{Type: it.Type, A: *it.Valid, B: e.Action == ActionAccept})
			}
		}
		r.Reviewers = append(r.Reviewers, cov)
		r.VsJudge = append(r.VsJudge, audit.CompareVerdicts("stored judge", s.Reviewer, pairs))
	}
	r.Covered = len(covered)
	for i, a := range d.States {
		for _, b := range d.States[i+1:] {
			r.Between = append(r.Between, between(c, a, b))
		}
	}
	return r
}

// between is the agreement of two reviewers on the items both decided.
func between(c *Corpus, a, b *State) *audit.Agreement {
	var pairs []audit.VerdictPair
	for k, ea := range a.Items {
		eb, ok := b.Items[k]
		it := c.item(k)
		if ok && it != nil {
			pairs = append(pairs, audit.VerdictPair{Type: it.Type, A: ea.Action == ActionAccept, B: eb.Action == ActionAccept})
		}
	}
	return audit.CompareVerdicts(a.Reviewer, b.Reviewer, pairs)
}

// item is the item k names, or nil.
func (c *Corpus) item(k ItemKey) *Item {
	rec := c.byID[k.Record]
	if rec == nil {
		return nil
	}
	for i := range rec.Items {
		if rec.Items[i].ID == k.Item {
			return &rec.Items[i]
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\nPeople's review (%s)\n", strings.Join(r.Logs, ", "))
	fmt.Fprintf(w, "  coverage: %d of %d items decided (%s); %d item(s) decided differently by two reviewers\n",
		r.Covered, r.Items, percent(r.Covered, r.Items), r.Conflicts)
	// Names are padded to one width, so that right alignment leaves them
	// aligned on the left.
	width := len("reviewer")
	for _, c := range r.Reviewers {
		width = max(width, len(c.Reviewer))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  %-*s\tdecided\taccepted\trejected\tedited\tflagged records\t\n", width, "reviewer")
	for _, c := range r.Reviewers {
		fmt.Fprintf(tw, "  %-*s\t%d\t%d\t%d\t%d\t%d\t\n", width, c.Reviewer, c.Decided, c.Accepted, c.Rejected, c.Edited, c.Flagged)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  agreement on validity (a reviewer's verdict is valid when they accepted the item as written):")
	all := append(append([]*audit.Agreement{}, r.VsJudge...), r.Between...)
	width = len("between")
	for _, a := range all {
		width = max(width, len(a.A+" / "+a.B))
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  %-*s\t%-7s\titems\tagreement\tkappa\t\n", width, "between", "type")
	for _, a := range all {
		name := a.A + " / " + a.B
		fmt.Fprintf(tw, "  %-*s\t%-7s\t%d\t%s\t%s\t\n", width, name, "all", a.Items, rate(a.Rate), kappa(a.Kappa, a.Scale))
		for _, t := range a.ByType {
			fmt.Fprintf(tw, "  %-*s\t%-7s\t%d\t%s\t%s\t\n", width, name, t.Type, t.Items, rate(t.Rate), kappa(t.Kappa, ""))
		}
	}
	return tw.Flush()
}

func percent(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

func rate(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**r)
}

func kappa(k *float64, scale string) string {
	if k == nil {
		return "undefined"
	}
	if scale != "" {
		return fmt.Sprintf("%.2f (%s)", *k, scale)
	}
	return fmt.Sprintf("%.2f", *k)
}
