package audit

import "fmt"

// Gate is what a CI job requires of a corpus. A negative field is off.
type Gate struct {
	MinValidity   float64 // overall validity rate (valid / judged) at least this
	MaxViolations int64   // structural violations at most this many
}

// Failures lists the gate's conditions the report does not meet, in words.
func (r *Report) Failures(g Gate) []string {
	var out []string
	if g.MinValidity >= 0 {
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
