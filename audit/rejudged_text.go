package audit

import (
	"fmt"
	"io"

	"github.com/rubricforge/rubricforge/judgestats"
)

// textPanel writes the panel section of a rejudge --panel report.
func (r *AgreementReport) textPanel(w io.Writer) {
	p := r.Panel
	if p == nil {
		return
	}
	heading(w, "Judge panel: %d judges; the panel's verdict is a strict majority", len(p.Judges))
	indented(w, "a judge that failed counts as a vote against, and a tie is invalid; a judge's agreement "+
		"with the stored verdicts and with the panel's is over the items it answered")
	t := newTable("judge", "model", "answered", "failed", "vs stored", "kappa", "vs panel", "kappa", "cost")
	for _, j := range p.Judges {
		t.add(j.Name, j.Model, num(j.Answered), num(j.Failed), pct(j.Stored.Rate), fix(j.Stored.Kappa, 2),
			pct(j.Panel.Rate), fix(j.Panel.Kappa, 2), fmt.Sprintf("$%.4f", j.LLM.CostUSD))
	}
	t.leftAlign(1).write(w)
	for _, j := range p.Judges {
		writeJudgeLine(w, j.Name, j.BaseURL, j.Template, j.GroundedTemplate)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  inter-judge agreement: Fleiss' kappa over the items two or more judges answered")
	writeKappas(w, "items", p.InterJudge)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  validity rate with 95% Wilson interval (a judge's over the items it answered)")
	writeRates(w, "panel", p.ValidRates)
}

// writeKappas writes Fleiss' kappa by type; count names what it is over.
func writeKappas(w io.Writer, count string, kappas []KappaFigure) {
	t := newTable("type", count, "Fleiss' kappa", "scale").leftAlign(3)
	for _, k := range kappas {
		t.add(k.Type, num(k.Items), fix(k.Kappa, 2), k.Scale)
	}
	t.write(w)
}

// writeRates writes the panel's and each judge's rates by type, with
// their intervals; panel heads the panel's column.
func writeRates(w io.Writer, panel string, rates []TypeValidRates) {
	head := []string{"type", panel}
	if len(rates) > 0 {
		for _, j := range rates[0].Judges {
			head = append(head, j.Judge)
		}
	}
	t := newTable(head...)
	for _, tr := range rates {
		row := []string{tr.Type, rateText(tr.Panel)}
		for _, j := range tr.Judges {
			row = append(row, rateText(j))
		}
		t.add(row...)
	}
	t.write(w)
}

// rateText writes a rate and its interval: "92.0% [85.0-96.0]"; "-" with
// nothing judged.
func rateText(f RateFigure) string {
	if f.Rate == nil || f.Interval == nil {
		return "-"
	}
	return fmt.Sprintf("%s [%.1f-%.1f]", pct(f.Rate), 100*f.Interval.Low, 100*f.Interval.High)
}

// textOrderCheck writes the order check section.
func (r *AgreementReport) textOrderCheck(w io.Writer) {
	oc := r.OrderCheck
	if oc == nil {
		return
	}
	heading(w, "Order check: %s items of %s records, each judged in rubric order and reversed",
		num(int64(oc.Items)), num(int64(oc.Records)))
	indented(w, "flip rate: the share of items whose verdict differs between the two orders (95% Wilson "+
		"interval); of the flips, how many called the item valid in the order that showed it earlier, "+
		"and later (a judge that favours what comes first has many more earlier)")
	t := newTable("judge", "type", "items", "flips", "flip rate", "95% interval", "valid earlier", "valid later")
	for _, j := range oc.Judges {
		for _, f := range j.ByType {
			t.add(j.Judge, f.Type, num(f.Items), num(f.Flips), pct(f.Rate), intervalText(f.Interval), num(f.ValidEarlier), num(f.ValidLater))
		}
	}
	t.leftAlign(1).write(w)
	fmt.Fprintln(w)
	indented(w, "position bias: the share of items called valid only where shown earlier minus the share "+
		"called valid only where shown later (95% interval of a paired difference, Agresti-Min); "+
		"positive favours what comes first, and an interval around 0 measures no bias")
	t = newTable("judge", "type", "items", "position bias", "95% interval")
	for _, j := range oc.Judges {
		for _, f := range j.ByType {
			t.add(j.Judge, f.Type, num(f.Items), signedPct(f.Bias), signedInterval(f.BiasInterval))
		}
	}
	t.leftAlign(1).write(w)
}

// signedPct writes a difference of shares as signed percentage points:
// "+1.2%"; "-" for nil.
func signedPct(d *float64) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100**d)
}

// signedInterval writes an interval of a difference: "-0.3 to +2.2%".
func signedInterval(iv *judgestats.Interval) string {
	if iv == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f to %+.1f%%", 100*iv.Low, 100*iv.High)
}
