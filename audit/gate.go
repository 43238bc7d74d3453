package audit

import (
	"fmt"

	"github.com/rubricforge/rubricforge/judgestats"
)

// Gate is what a CI job requires of a corpus. A negative field, and a nil
// one, is off.
type Gate struct {
	MinValidity   float64 // overall validity rate (valid / judged) at least this
	MaxViolations int64   // structural violations at most this many
	// MinAUROC: the mean rubric AUROC of the measured records at least
	// this; MaxAntiShare: anti-discriminative items at most this share of
	// the measured items (Discrimination).
	MinAUROC, MaxAntiShare *float64
	// OnLower applies MinValidity to the lower bound of the overall 95%
	// interval (the corrected rate's with a sheet, else Wilson's) instead
	// of the judge's rate, and MinAUROC to the lower bound of the AUROC's
	// 95% interval.
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
	if g.MinAUROC != nil {
		if value, what, ok := d.gatedAUROC(g.OnLower); ok && value < *g.MinAUROC {
			out = append(out, fmt.Sprintf(what, formatFloat(round4(value)))+" is below --min-auroc "+formatFloat(*g.MinAUROC))
		}
	}
	if g.MaxAntiShare != nil && d.AntiShare != nil && *d.AntiShare > *g.MaxAntiShare {
		out = append(out, fmt.Sprintf("anti-discriminative items %s (%s of %s measured items) is above --max-anti-share %s",
			formatFloat(round4(*d.AntiShare)), num(d.Total.Anti), num(d.Total.Items), formatFloat(*g.MaxAntiShare)))
	}
	return out
}

// gatedAUROC is what --min-auroc checks: on a refined corpus the held-out
// rubric AUROC refine.json holds (in-sample figures overstate it), else
// the mean rubric AUROC; with onLower the lower bound of its 95%
// interval. what names it for the message, %s standing for the value.
func (d *Discrimination) gatedAUROC(onLower bool) (value float64, what string, ok bool) {
	if ref := d.Refined; ref != nil {
		c := ref.HeldOut.WithAnswer
		if c.Records == 0 {
			return 0, "", false
		}
		if onLower {
			return c.AfterCI95[0], "the lower bound %s of the held-out rubric AUROC's 95%% interval (refinement " + ref.Fingerprint + ", " + num(c.Records) + " records; the in-sample AUROC is higher)", true
		}
		return c.After, "held-out rubric AUROC %s of the refinement " + ref.Fingerprint + " over " + num(c.Records) + " records (the in-sample AUROC is higher)", true
	}
	if d.MeanAUROC == nil {
		return 0, "", false
	}
	if onLower && d.MeanAUROCCI95 != nil {
		return d.MeanAUROCCI95[0], "the lower bound %s of the mean rubric AUROC's 95%% interval over " + num(d.Measured) + " measured records", true
	}
	return *d.MeanAUROC, "mean rubric AUROC %s over " + num(d.Measured) + " measured records", true
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
