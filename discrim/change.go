package discrim

// Change is a mean AUROC over Records records before and after a
// refinement, the mean change with its 95% interval (a bootstrap over
// records and rollouts, Boot), and whether the interval lies above 0
// (Raised) or below (Lowered). distill refine writes it; validate reads it
// back from a refined corpus.
type Change struct {
	Records    int64      `json:"records"`
	Before     float64    `json:"before"`
	BeforeCI95 [2]float64 `json:"before_ci95"`
	After      float64    `json:"after"`
	AfterCI95  [2]float64 `json:"after_ci95"`
	Change     float64    `json:"change"`
	CI95       [2]float64 `json:"ci95"`
	Raised     bool       `json:"raised"`
	Lowered    bool       `json:"lowered"`
}

// FigureSet is one figure's Change without and with ANSWER items.
type FigureSet struct {
	WithoutAnswer Change `json:"without_answer"`
	WithAnswer    Change `json:"with_answer"`
}

// ChangeOf is the Change of series before and after and their diff in b.
func ChangeOf(b *Boot, before, after, diff int) Change {
	eb, ea, ed := b.Estimate(before), b.Estimate(after), b.Estimate(diff)
	return Change{Records: ed.Records, Before: eb.Mean, BeforeCI95: eb.CI95, After: ea.Mean, AfterCI95: ea.CI95,
		Change: ed.Mean, CI95: ed.CI95, Raised: ed.Records > 0 && ed.CI95[0] > 0, Lowered: ed.Records > 0 && ed.CI95[1] < 0}
}
