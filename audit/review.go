package audit

import (
	_ "embed"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// PeopleReview is the report's review section: what people decided on the
// review page (validate review), read from the logs beside the corpus by
// package review, which fills it in. A reviewer's verdict is "valid" when
// they accepted the item as written; a reject or an edit says it was not.
type PeopleReview struct {
	Logs      []string           `json:"logs"`
	Items     int                `json:"items"`   // items in the corpus under review
	Covered   int                `json:"covered"` // items at least one reviewer decided
	Reviewers []ReviewerCoverage `json:"reviewers"`
	// VsJudge holds one agreement per reviewer: the stored judge's
	// verdicts against theirs, on the items both judged.
	VsJudge []*Agreement `json:"vs_judge"`
	// Between holds one agreement per pair of reviewers, on the items both
	// decided.
	Between   []*Agreement `json:"between_reviewers"`
	Conflicts int          `json:"conflicts"`
	// Flagged lists the records reviewers flagged for a second look (the
	// standing flags), by record.
	Flagged []FlaggedRecord `json:"flagged"`
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

// FlaggedRecord is one reviewer's standing flag on a record.
type FlaggedRecord struct {
	Record   string    `json:"record"`
	Reviewer string    `json:"reviewer"`
	Reason   string    `json:"reason"`
	Time     time.Time `json:"time"`
}

//go:embed review.html.tmpl
var reviewHTML string

// textReview writes the review section, when there is one.
func (r *Report) textReview(w io.Writer) {
	if r.Review != nil {
		_ = r.Review.WriteText(w) // w is the report's errWriter: it keeps the first error, which WriteText returns
	}
}

// listedFlags is how many flagged records the text report names.
const listedFlags = 20

// WriteText writes the section for a person.
func (r *PeopleReview) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\nPeople's review (%s)\n", strings.Join(r.Logs, ", "))
	fmt.Fprintf(w, "  coverage: %d of %d items decided (%s); %d item(s) decided differently by two reviewers\n",
		r.Covered, r.Items, percentOf(r.Covered, r.Items), r.Conflicts)
	if len(r.Reviewers) == 0 {
		fmt.Fprintln(w, "  no reviewer has decided an item yet")
	}
	if len(r.Reviewers) > 0 {
		if err := r.writeReviewers(w); err != nil {
			return err
		}
	}
	if len(r.Flagged) > 0 {
		var names []string
		for _, f := range r.Flagged[:min(listedFlags, len(r.Flagged))] {
			s := f.Record + " (" + f.Reviewer
			if f.Reason != "" {
				s += ": " + f.Reason
			}
			names = append(names, s+")")
		}
		more := ""
		if len(r.Flagged) > listedFlags {
			more = fmt.Sprintf(" and %d more (--json lists them all)", len(r.Flagged)-listedFlags)
		}
		fmt.Fprintf(w, "  flagged: %s%s\n", strings.Join(names, ", "), more)
	}
	if len(r.Reviewers) == 0 {
		return nil
	}
	fmt.Fprintln(w, "  agreement on validity (a reviewer's verdict is valid when they accepted the item as written):")
	all := append(append([]*Agreement{}, r.VsJudge...), r.Between...)
	width := len("between")
	for _, a := range all {
		width = max(width, len(a.A+" / "+a.B))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  %-*s\t%-9s\titems\tagreement\tkappa\t\n", width, "between", "type")
	for _, a := range all {
		name := a.A + " / " + a.B
		fmt.Fprintf(tw, "  %-*s\t%-9s\t%d\t%s\t%s\t\n", width, name, "all", a.Items, ratePct(a.Rate), kappaText(a.Kappa, a.Scale))
		for _, t := range a.ByType {
			fmt.Fprintf(tw, "  %-*s\t%-9s\t%d\t%s\t%s\t\n", width, name, t.Type, t.Items, ratePct(t.Rate), kappaText(t.Kappa, ""))
		}
	}
	return tw.Flush()
}

// writeReviewers writes the table of reviewers' decisions.
func (r *PeopleReview) writeReviewers(w io.Writer) error {
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
	return tw.Flush()
}

func percentOf(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

func ratePct(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**r)
}

func kappaText(k *float64, scale string) string {
	if k == nil {
		return "undefined"
	}
	if scale != "" {
		return fmt.Sprintf("%.2f (%s)", *k, scale)
	}
	return fmt.Sprintf("%.2f", *k)
}

// AgreementRows are the agreement table's rows: each pair overall, then
// by type.
func (r *PeopleReview) AgreementRows() []TypeAgreementRow {
	var out []TypeAgreementRow
	for _, a := range append(append([]*Agreement{}, r.VsJudge...), r.Between...) {
		name := a.A + " / " + a.B
		out = append(out, TypeAgreementRow{Between: name, Type: "all", Items: a.Items, Rate: a.Rate, Kappa: kappaText(a.Kappa, a.Scale)})
		for _, t := range a.ByType {
			out = append(out, TypeAgreementRow{Between: name, Type: t.Type, Items: t.Items, Rate: t.Rate, Kappa: kappaText(t.Kappa, "")})
		}
	}
	return out
}

// TypeAgreementRow is one row of the HTML agreement table.
type TypeAgreementRow struct {
	Between, Type string
	Items         int64
	Rate          *float64
	Kappa         string
}

// CoveredShare is the share of items decided, as text.
func (r *PeopleReview) CoveredShare() string { return percentOf(r.Covered, r.Items) }
