package corpus

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// ExportReview changes the records of an export as people's review
// decided (`distill export --review LOG...`; package review implements it):
// Apply edits rec's rubric in place and says whether the record is still
// exported; Summary is what it did, for export.json and the card.
type ExportReview interface {
	Apply(rec *schema.Record) (keep bool)
	Summary() ReviewSummary
}

// PolicyNone is ReviewSummary.Policy when no policy was given (there was
// no conflict to settle).
const PolicyNone = "none"

// ReviewSummary is export.json's review section: which logs were applied,
// under which policy, and how many items each reviewer's decisions
// accepted, rejected (dropped) and edited.
type ReviewSummary struct {
	Logs      []string         `json:"logs"`
	Policy    string           `json:"policy"`
	Reviewers []ReviewerCounts `json:"reviewers"`
	// Items counts the decisions applied; RecordsDropped the records whose
	// rubric no longer held once rejected items were dropped.
	ItemsAccepted  int64 `json:"items_accepted"`
	ItemsRejected  int64 `json:"items_rejected"`
	ItemsEdited    int64 `json:"items_edited"`
	RecordsDropped int64 `json:"records_dropped"`
	// Conflicts counts the items reviewers decided differently (settled by
	// Policy); Stale the decisions on items that changed since they were
	// made, not applied.
	Conflicts int64 `json:"conflicts"`
	Stale     int64 `json:"stale"`
}

// ReviewerCounts is what one reviewer's applied decisions did.
type ReviewerCounts struct {
	Reviewer string `json:"reviewer"`
	Accepted int64  `json:"accepted"`
	Rejected int64  `json:"rejected"`
	Edited   int64  `json:"edited"`
}

// reviewSection writes the card's account of the review, when there was one.
func (in cardInput) reviewSection(b *bytes.Buffer) {
	r := in.manifest.Review
	if r == nil {
		return
	}
	b.WriteString("## People's review\n\n")
	fmt.Fprintf(b, "Decisions from %d review log(s) (%s), policy `%s`: %d items accepted, %d rejected (dropped), %d edited; "+
		"%d records dropped because their rubric no longer held; %d conflicting items; %d stale decisions not applied.\n\n",
		len(r.Logs), strings.Join(r.Logs, ", "), r.Policy, r.ItemsAccepted, r.ItemsRejected, r.ItemsEdited, r.RecordsDropped, r.Conflicts, r.Stale)
	b.WriteString("| reviewer | accepted | rejected | edited |\n| --- | ---: | ---: | ---: |\n")
	for _, c := range r.Reviewers {
		fmt.Fprintf(b, "| %s | %d | %d | %d |\n", c.Reviewer, c.Accepted, c.Rejected, c.Edited)
	}
	b.WriteString("\n")
}
