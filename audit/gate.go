package audit

import "fmt"

// Gate is what a CI job requires of a corpus. A negative field, and a nil
// one, is off.
type Gate struct {
	MinValidity   float64 // overall validity rate (valid / judged) at least this
	MaxViolations int64   // structural violations at most this many
	// MinAUROC: the mean rubric AUROC of the measured records at least
	// this; MaxAntiShare: anti-discriminative items at most this share of
	// the measured items (Discrimination).
	MinAUROC, MaxAntiShare *float64
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
	return append(out, r.discriminationFailures(g)...)
}

// discriminationFailures lists the discrimination gates the report does not
// meet. A gate that cannot be checked (no measured record) fails, saying why.
func (r *Report) discriminationFailures(g Gate) []string {
	if g.MinAUROC == nil && g.MaxAntiShare == nil {
		return nil
	}
	d := r.Discrimination
	if d == nil || d.Measured == 0 {
		why := "no record is measured (" + r.unmeasuredWhy() + ")"
		var out []string
		if g.MinAUROC != nil {
			out = append(out, fmt.Sprintf("discrimination: %s, so the rubric AUROC cannot be checked against --min-auroc %s", why, formatFloat(*g.MinAUROC)))
		}
		if g.MaxAntiShare != nil {
			out = append(out, fmt.Sprintf("discrimination: %s, so the anti-discriminative share cannot be checked against --max-anti-share %s", why, formatFloat(*g.MaxAntiShare)))
		}
		return out
	}
	var out []string
	if g.MinAUROC != nil && d.MeanAUROC != nil && *d.MeanAUROC < *g.MinAUROC {
		out = append(out, fmt.Sprintf("mean rubric AUROC %s over %s measured records is below --min-auroc %s",
			formatFloat(round4(*d.MeanAUROC)), num(d.Measured), formatFloat(*g.MinAUROC)))
	}
	if g.MaxAntiShare != nil && d.AntiShare != nil && *d.AntiShare > *g.MaxAntiShare {
		out = append(out, fmt.Sprintf("anti-discriminative items %s (%s of %s measured items) is above --max-anti-share %s",
			formatFloat(round4(*d.AntiShare)), num(d.Total.Anti), num(d.Total.Items), formatFloat(*g.MaxAntiShare)))
	}
	return out
}

// unmeasuredWhy says in words why the discrimination section measured
// nothing.
func (r *Report) unmeasuredWhy() string {
	d := r.Discrimination
	switch {
	case d == nil && r.Corpus.RubricKind == RubricGrounded:
		return "a grounded corpus has no correctness labels"
	case d == nil:
		return "this input has no rollouts"
	case d.Needs != nil:
		return "no satisfaction verdicts: run the empirical stage"
	case d.Records == 0:
		return "no math record"
	}
	return fmt.Sprintf("%s records without items, %s without verdicts, %s with only correct and %s with only flawed rollouts",
		num(d.Unmeasured.NoItems), num(d.Unmeasured.NoVerdicts), num(d.Unmeasured.OnlyCorrect), num(d.Unmeasured.OnlyFlawed))
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
