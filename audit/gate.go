package audit

import (
	"fmt"

	"github.com/rubricforge/rubricforge/judgestats"
)

// Gate is what a CI job requires of a corpus. A negative field is off.
type Gate struct {
	MinValidity   float64 // overall validity rate (valid / judged) at least this
	MaxViolations int64   // structural violations at most this many
	// OnLower applies MinValidity to the lower bound of the overall 95%
	// interval (the corrected rate's with a sheet, else Wilson's) instead
	// of the judge's rate.
	OnLower bool
}

// Failures lists the gate's conditions the report does not meet, in words.
func (r *Report) Failures(g Gate) []string {
	var out []string
	if g.MinValidity >= 0 && g.OnLower {
		out = append(out, r.lowerBoundFailures(g.MinValidity)...)
	}
	if g.MinValidity >= 0 && !g.OnLower {
		overall := r.gateValidity()
		switch rate := overall.Rate; {
		case rate == nil:
			out = append(out, fmt.Sprintf("validity: no item has a verdict, so the rate cannot be checked against %s", formatFloat(g.MinValidity)))
		case *rate < g.MinValidity:
			out = append(out, fmt.Sprintf("validity %s (%d of %d judged items valid) is below --min-validity %s",
				formatFloat(round4(*rate)), overall.Valid, overall.Valid+overall.Invalid, formatFloat(g.MinValidity)))
		}
	}
	if g.MaxViolations >= 0 && r.Structure.Violations > g.MaxViolations {
		out = append(out, fmt.Sprintf("%d structural violations in %d records; --max-violations is %d",
			r.Structure.Violations, r.Structure.RecordsWithViolations, g.MaxViolations))
	}
	return out
}

// Damage lists what makes the corpus itself damaged rather than merely
// imperfect: input that could not be read, record ids that repeat.
func (r *Report) Damage() []string {
	var out []string
	if n := len(r.InputProblems); n > 0 {
		out = append(out, fmt.Sprintf("%d input problems (unreadable files or lines; listed in the report)", n))
	}
	for _, rc := range r.Structure.ByRule {
		if rc.Rule == RuleDuplicateID {
			out = append(out, fmt.Sprintf("%d records repeat the id of an earlier record", rc.Records))
		}
	}
	return out
}

func round4(x float64) float64 { return float64(int64(x*1e4+0.5)) / 1e4 }

// lowerBoundFailures checks the lower bound of the overall validity
// interval against minRate; without one the gate fails and says why.
func (r *Report) lowerBoundFailures(minRate float64) []string {
	low, what, ok := r.validityLowerBound()
	switch {
	case !ok:
		return []string{fmt.Sprintf("validity: %s, so --min-validity %s cannot be checked on the lower bound", what, formatFloat(minRate))}
	case low < minRate:
		return []string{fmt.Sprintf("validity: %s is %s, below --min-validity %s", what, formatFloat(round4(low)), formatFloat(minRate))}
	}
	return nil
}

// validityLowerBound is the lower end of the overall 95% interval the
// gate checks with OnLower: the corrected rate's when people labelled a
// sample (validate --human), else the Wilson interval of the rate the
// plain gate checks (rubric items and grounded criteria).
func (r *Report) validityLowerBound() (low float64, what string, ok bool) {
	if rel := r.Reliability; rel != nil && rel.Sheet != "" {
		return rel.correctedLowerBound()
	}
	v := r.gateValidity()
	iv, ok := judgestats.Wilson(v.Valid, v.Valid+v.Invalid, judgestats.Z95)
	if !ok {
		return 0, "no item has a verdict", false
	}
	return iv.Low, "the lower bound of the validity rate's 95% Wilson interval", true
}
