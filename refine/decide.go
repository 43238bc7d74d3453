package refine

import (
	"cmp"
	"math"
	"slices"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// Why an item is dropped.
const (
	DropDead      = "dead"      // good on no more rollouts than the judge's errors explain
	DropSaturated = "saturated" // bad on no more rollouts than the judge's errors explain (split it: --decompose)
	DropAnti      = "anti"      // anti-discriminative: discrim's Fisher test, or an edge below MinEdge
	DropRedundant = "redundant" // says what a kept item says, by the verdicts
	// The drops of a finer item that --decompose proposed, besides the
	// statistics' own: the validity judge found it invalid, or its edge
	// is not positive.
	DropInvalid = "invalid"
	DropNoEdge  = "no_edge"
)

// DefaultMinEdge is the edge below which an item is dropped as
// anti-discriminative even when the Fisher test under multiple-comparison
// control cannot tell, as long as the counts make a lower rate among the
// correct rollouts likely (AntiPosterior).
const DefaultMinEdge = -0.1

// AntiPosterior is how likely, by discrim.ProbLower, an item's good-side
// rate must be lower among correct rollouts than among flawed ones for an
// edge below MinEdge to drop it: an edge one rollout decides (a record
// with a single correct or flawed rollout) does not.
const AntiPosterior = 0.65

// Rule bounds of the styles (schema.CheckRubric) that a refinement keeps.
const (
	minFactualProcessItems = 3
	// edgeFloor is the edge an item with a smaller one is weighted by,
	// so that an item kept for the style's rules still counts a little.
	edgeFloor = 0.05
)

// Options tune a refinement; the zero value is not usable, take
// [DefaultOptions].
type Options struct {
	// MinEdge: an item whose edge is below it is dropped as
	// anti-discriminative.
	MinEdge float64
	// Saturated95 drops items good on ≥ 95% of the rollouts as saturated
	// (discrim's Saturated95) besides those saturated within the judge's
	// errors.
	Saturated95 bool
	// AntiAlpha is the false-discovery rate of discrim's
	// anti-discriminative test (0: discrim.DefaultAntiAlpha).
	AntiAlpha float64
	// MinSide is the fewest correct and the fewest flawed judged rollouts
	// a record must hold to be refined; with fewer it is copied unchanged.
	MinSide int
	// Folds is how many folds the held-out figures are cross-fitted on
	// (discrim.Folds; below 2: discrim.DefaultFolds).
	Folds int
	// JudgeError is the satisfaction judge's error rate the definitions
	// tolerate (discrim.Options.JudgeError: 0 the default, negative none).
	JudgeError float64
}

// DefaultOptions are the settings `distill refine` uses without flags.
func DefaultOptions() Options {
	return Options{MinEdge: DefaultMinEdge, MinSide: DefaultMinSide, Folds: discrim.DefaultFolds}
}

// DefaultMinSide is Options.MinSide without a flag: every record with a
// correct and a flawed judged rollout is refined.
const DefaultMinSide = 1

func (o Options) folds() int {
	if o.Folds < 2 {
		return discrim.DefaultFolds
	}
	return o.Folds
}

func (o Options) discrim(text bool) discrim.Options {
	return discrim.Options{AntiAlpha: o.AntiAlpha, JudgeError: o.JudgeError, DecisionsOnly: !text}
}

// UnmeasuredFewRollouts is the reason a record with fewer than
// Options.MinSide judged rollouts on a side is not refined.
const UnmeasuredFewRollouts = "few_rollouts_on_a_side"

// ItemDecision is what the refinement does with one item of a record.
type ItemDecision struct {
	ID   int32  `json:"id"` // in the source record
	Type string `json:"type"`
	// Edge is the item's edge over the record's judged rollouts.
	Edge float64 `json:"edge"`
	// Drop says why it is dropped; "" when it is kept.
	Drop string `json:"drop,omitempty"`
	// RedundantWith is the source id of the kept item a redundant one
	// repeats.
	RedundantWith int32 `json:"redundant_with,omitempty"`
	// Restored is true for an item dropped by the statistics but kept so
	// that the rubric still holds the style's rules (srar: one SUGGEST;
	// factual_process: three items).
	Restored bool `json:"restored,omitempty"`
	// NewID and Weight are the kept item's id and weight in the refined
	// record.
	NewID  int32   `json:"new_id,omitempty"`
	Weight float64 `json:"weight,omitempty"`
	// Finer marks an item that --decompose proposed in place of the
	// record's saturated items (its ID follows the source's items); Text
	// is its text.
	Finer bool   `json:"finer,omitempty"`
	Text  string `json:"text,omitempty"`
}

// Decision is the refinement of one record.
type Decision struct {
	ID string `json:"id"`
	// Unmeasured is why the record is copied unchanged ("" when it is
	// refined): it lacks correct or flawed judged rollouts (or has fewer
	// than MinSide on a side), or it has no verdicts at all.
	Unmeasured string         `json:"unmeasured,omitempty"`
	Items      []ItemDecision `json:"items,omitempty"`
	// Held is the record's AUROCs before and after, held out and in-sample.
	Held RecordHeldOut `json:"held_out"`
	eval *recordEval
}

// Changed reports whether the refinement changes the record.
// A measured record always changes: its weights are set anew.
func (d *Decision) Changed() bool { return d.Unmeasured == "" }

// Decide refines a record's verdicts (m, from discrim.FromRecord, whose
// items carry their stored weights): the items to keep and their weights
// are decided on all its judged rollouts, and its held-out AUROCs are
// cross-fitted (see crossFit).
func Decide(id string, m *discrim.Matrix, opt Options) Decision {
	return decide(id, m, len(m.Items), opt, nil, nil)
}

// decide is Decide for a matrix whose first nSource items are the
// source's (the others are --decompose's finer items), with veto, when not
// nil, saying why an item the statistics keep is dropped all the same (""
// to keep it), and eval, when not nil, the positions of the rollouts the
// held-out figures may be measured on (nil: all).
func decide(id string, m *discrim.Matrix, nSource int, opt Options, veto vetoFunc, eval []int) Decision {
	d := Decision{ID: id}
	if m.Rollouts() == 0 {
		d.Unmeasured = discrim.NoVerdicts.String()
		return d
	}
	f := fitOn(m, nil, opt, veto, true)
	if f.unmeasured != "" {
		d.Unmeasured = f.unmeasured
		return d
	}
	d.Items = f.items
	for k, i := range f.kept {
		d.Items[i].NewID, d.Items[i].Weight = int32(k+1), f.weights[k]
	}
	d.Held, d.eval = crossFit(id, m, nSource, opt, veto, f.version(), eval)
	return d
}

type vetoFunc func(i int, edge float64) string

// fitted is the rules' decision over one set of rollouts.
type fitted struct {
	unmeasured string
	items      []ItemDecision
	kept       []int
	weights    []float64
}

func (f *fitted) version() discrim.Version {
	return discrim.Version{Keep: f.kept, Weights: f.weights}
}

// fitOn applies the rules to m's rollouts at pos (nil: all): drops, the
// style's restorations, and the kept items' weights.
func fitOn(m *discrim.Matrix, pos []int, opt Options, veto vetoFunc, text bool) fitted {
	st := discrim.Measure(m, pos, opt.discrim(text))
	if st.Unmeasured != discrim.Measured {
		return fitted{unmeasured: st.Unmeasured.String()}
	}
	if st.Correct < opt.MinSide || st.Flawed < opt.MinSide {
		return fitted{unmeasured: UnmeasuredFewRollouts}
	}
	items := make([]ItemDecision, len(m.Items))
	for i, s := range st.Items {
		items[i] = ItemDecision{ID: s.ID, Type: s.Type, Edge: s.Edge, Drop: dropReason(s, opt, st.Correct, st.Flawed)}
		if items[i].Drop == "" && veto != nil {
			items[i].Drop = veto(i, s.Edge)
		}
	}
	dropRedundant(items, st.Redundant)
	restoreForStyle(m.Style, items)
	kept := keptPositions(items)
	return fitted{items: items, kept: kept, weights: Weights(m, pos, kept, edgesOf(items, kept), m.Style)}
}

// dropReason is why the statistics drop an item on their own, "" to keep
// it. ANSWER items are always kept: the srar style needs exactly one.
func dropReason(s discrim.ItemStats, opt Options, nCorrect, nFlawed int) string {
	switch {
	case s.Type == schema.TypeAnswer:
		return ""
	case s.Dead:
		return DropDead
	case s.Saturated || (opt.Saturated95 && s.Saturated95):
		return DropSaturated
	case s.Anti || s.Edge < opt.MinEdge && discrim.ProbLower(s.GoodCorrect, nCorrect, s.GoodFlawed, nFlawed) >= AntiPosterior:
		return DropAnti
	}
	return ""
}

// dropRedundant drops one item of each redundant pair (discrim's: the two
// move together within the correct and within the flawed rollouts) that
// is still whole: the one with the smaller edge (the later one on a tie),
// never an ANSWER item. Pairs are taken strongest first (by their
// within-label correlation).
func dropRedundant(items []ItemDecision, pairs []discrim.Pair) {
	pairs = slices.Clone(pairs)
	slices.SortStableFunc(pairs, func(a, b discrim.Pair) int { return cmp.Compare(nanLow(b.Corr), nanLow(a.Corr)) })
	for _, p := range pairs {
		a, b := &items[p.A], &items[p.B]
		if a.Drop != "" || b.Drop != "" {
			continue
		}
		loser, winner := b, a
		if b.Edge > a.Edge {
			loser, winner = a, b
		}
		if loser.Type == schema.TypeAnswer {
			loser, winner = winner, loser
		}
		if loser.Type == schema.TypeAnswer {
			continue
		}
		loser.Drop, loser.RedundantWith = DropRedundant, winner.ID
	}
}

func nanLow(x float64) float64 {
	if math.IsNaN(x) {
		return -2
	}
	return x
}

// restoreForStyle keeps dropped items, largest edge first, until the
// rubric holds the style's rules again: srar needs a SUGGEST item,
// factual_process three items.
func restoreForStyle(style string, items []ItemDecision) {
	switch style {
	case schema.StyleSRaR:
		if !slices.ContainsFunc(items, func(it ItemDecision) bool { return it.Drop == "" && it.Type == schema.TypeSuggest }) {
			restoreBest(items, 1, func(it ItemDecision) bool { return it.Type == schema.TypeSuggest })
		}
	case schema.StyleFactualProcess:
		n := len(keptPositions(items))
		restoreBest(items, minFactualProcessItems-n, func(ItemDecision) bool { return true })
	}
}

// restoreBest restores up to n dropped items that match, largest edge first.
func restoreBest(items []ItemDecision, n int, match func(ItemDecision) bool) {
	for ; n > 0; n-- {
		best := -1
		for i, it := range items {
			if it.Drop != "" && match(it) && (best < 0 || it.Edge > items[best].Edge) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		items[best].Drop, items[best].RedundantWith, items[best].Restored = "", 0, true
	}
}

func keptPositions(items []ItemDecision) []int {
	var out []int
	for i, it := range items {
		if it.Drop == "" {
			out = append(out, i)
		}
	}
	return out
}

func edgesOf(items []ItemDecision, kept []int) []float64 {
	out := make([]float64, len(kept))
	for k, i := range kept {
		out[k] = items[i].Edge
	}
	return out
}
