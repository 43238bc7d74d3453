package refine

import (
	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// RecordHeldOut is one refined record's AUROCs before and after the
// refinement, under its own scheme's paid reward (Default) and the rubric
// score validate reports (Rubric), with and without ANSWER items.
type RecordHeldOut struct {
	// Scheme is the record's own scheme (schema.DefaultScheme of its style).
	Scheme string `json:"scheme"`
	// Folds is how many folds the held-out figures are cross-fitted on;
	// Pairs how many correct × flawed pairs within a fold they compare
	// (0: the record has no held-out figure), FitPairs the pairs of the
	// in-sample ones.
	Folds    int           `json:"folds"`
	Pairs    int           `json:"pairs"`
	FitPairs int           `json:"fit_pairs"`
	Default  RecordFigures `json:"default"`
	Rubric   RecordFigures `json:"rubric"`
}

// RecordFigures are one figure's AUROCs without and with ANSWER items; nil
// when the record has none.
type RecordFigures struct {
	WithoutAnswer *RecordFigure `json:"without_answer"`
	WithAnswer    *RecordFigure `json:"with_answer"`
}

// RecordFigure is one record's AUROC before and after, held out (Before,
// After: cross-fitted pairs) and in-sample (FitBefore, FitAfter: every
// pair, the refined rubric decided on every rollout).
type RecordFigure struct {
	Before    float64 `json:"before"`
	After     float64 `json:"after"`
	FitBefore float64 `json:"fit_before"`
	FitAfter  float64 `json:"fit_after"`
}

// recordEval is a record's scores for the summary's bootstrap: for each
// figure of discrim.Figures, before and after, over its held-out and its
// in-sample sample.
type recordEval struct {
	seed       uint64
	held, fit  *discrim.Sample
	heldScores [][]float64
	fitScores  [][]float64
}

// crossFit measures a refined record's AUROCs. Held out: its rollouts (at
// eval; nil: all) fall in Options.Folds folds (discrim.Folds); the rollouts
// of fold g are scored by the rubric the rules leave when they decide on
// the other folds (the source rubric when those cannot be refined: the
// refinement would copy the record unchanged), and a correct and a flawed
// rollout are compared only within one fold, so no pair is scored by a
// rubric decided on either of them. Before is the source rubric on the same
// pairs. In-sample: the refined rubric final, decided on every rollout,
// and the source's over every pair of every rollout: what validate sees in
// the refined corpus.
func crossFit(id string, m *discrim.Matrix, nSource int, opt Options, veto vetoFunc, final discrim.Version, eval []int) (RecordHeldOut, *recordEval) {
	folds := discrim.Folds(m, opt.folds())
	versions := foldVersions(m, folds, opt, nSource, veto)
	if eval == nil {
		eval = make([]int, m.Rollouts())
		for r := range eval {
			eval[r] = r
		}
	}
	group := make([]int32, len(eval))
	for j, r := range eval {
		group[j] = folds[r]
	}
	all := make([]int, m.Rollouts())
	for r := range all {
		all[r] = r
	}
	ev := &recordEval{seed: discrim.RecordSeed(id), held: discrim.NewSample(m, eval, group), fit: discrim.NewSample(m, all, nil)}
	figures := discrim.Figures()
	var sc discrim.Scorer
	source := scoreAll(&sc, m, sourceVersion(m, nSource), figures, all)
	refined := scoreAll(&sc, m, final, figures, all)
	byFold := make([][][]float64, len(versions))
	foldPos := make([][]int, len(versions))
	for _, r := range eval {
		foldPos[folds[r]] = append(foldPos[folds[r]], r)
	}
	for g, v := range versions {
		if len(foldPos[g]) > 0 {
			byFold[g] = scoreAll(&sc, m, v, figures, foldPos[g])
		}
	}
	ev.heldScores = make([][]float64, 2*len(figures))
	ev.fitScores = make([][]float64, 2*len(figures))
	at := make([]int, len(versions)) // next score of each fold
	buf := make([]float64, 2*len(figures)*len(eval))
	for k := range figures {
		before, after := buf[:len(eval):len(eval)], buf[len(eval):2*len(eval):2*len(eval)]
		buf = buf[2*len(eval):]
		clear(at)
		for j, r := range eval {
			g := folds[r]
			before[j], after[j] = source[k][r], byFold[g][k][at[g]]
			at[g]++
		}
		ev.heldScores[2*k], ev.heldScores[2*k+1] = before, after
		ev.fitScores[2*k], ev.fitScores[2*k+1] = source[k], refined[k]
	}
	h := RecordHeldOut{Scheme: schema.DefaultScheme(m.Style), Folds: opt.folds(), Pairs: ev.held.Pairs(), FitPairs: ev.fit.Pairs()}
	for k, f := range figures {
		if f.Scheme != discrim.DefaultScheme && f.Scheme != discrim.RubricScore {
			continue
		}
		rf := ev.figure(k)
		set := &h.Default
		if f.Scheme == discrim.RubricScore {
			set = &h.Rubric
		}
		if f.WithAnswer {
			set.WithAnswer = rf
		} else {
			set.WithoutAnswer = rf
		}
	}
	return h, ev
}

// figure is the record's AUROCs of figure k; nil without a held-out pair.
func (ev *recordEval) figure(k int) *RecordFigure {
	b, okB := discrim.SampleAUROC(ev.held, ev.heldScores[2*k])
	a, okA := discrim.SampleAUROC(ev.held, ev.heldScores[2*k+1])
	fb, _ := discrim.SampleAUROC(ev.fit, ev.fitScores[2*k])
	fa, _ := discrim.SampleAUROC(ev.fit, ev.fitScores[2*k+1])
	if !okA || !okB {
		return nil
	}
	return &RecordFigure{Before: b, After: a, FitBefore: fb, FitAfter: fa}
}

// foldVersions are the rubrics that score each fold's rollouts: the rules
// decided on every other fold, or the source rubric where those cannot be
// refined.
func foldVersions(m *discrim.Matrix, folds []int32, opt Options, nSource int, veto vetoFunc) []discrim.Version {
	k := int32(0)
	for _, g := range folds {
		k = max(k, g+1)
	}
	out := make([]discrim.Version, k)
	for g := range k {
		f := fitOn(m, discrim.Without(folds, g), opt, veto, false)
		if f.unmeasured != "" {
			out[g] = sourceVersion(m, nSource)
			continue
		}
		out[g] = f.version()
	}
	return out
}

// sourceVersion is the source rubric: the first nSource items of m with
// their stored weights.
func sourceVersion(m *discrim.Matrix, nSource int) discrim.Version {
	v := discrim.SourceVersion(m)
	v.Keep, v.Weights = v.Keep[:nSource], v.Weights[:nSource]
	return v
}

// scoreAll is every figure's scores of the rollouts at pos under v, in
// the order of figures; figures that score alike under v (discrim.Same)
// share one slice. A rubric with nothing to score by (only ANSWER items,
// without them) pays every rollout alike, 0.
func scoreAll(sc *discrim.Scorer, m *discrim.Matrix, v discrim.Version, figures []discrim.Figure, pos []int) [][]float64 {
	out := make([][]float64, len(figures))
	done := make(map[discrim.Figure][]float64, len(figures))
	for k, f := range figures {
		same := discrim.Same(m, v, f)
		if s, ok := done[same]; ok {
			out[k] = s
			continue
		}
		s, ok := sc.Scores(nil, m, v, same, pos, nil)
		if !ok {
			s = make([]float64, len(pos))
		}
		done[same], out[k] = s, s
	}
	return out
}
