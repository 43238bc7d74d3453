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
	DropDead      = "dead"      // good on no fit rollout
	DropSaturated = "saturated" // good on every fit rollout (split it: --decompose)
	DropAnti      = "anti"      // anti-discriminative: discrim's Fisher test, or an edge below MinEdge
	DropRedundant = "redundant" // says what a kept item says, by the verdicts
	// The drops of a finer item that --decompose proposed, besides the
	// statistics' own: the validity judge found it invalid, or its fit
	// edge is not positive.
	DropInvalid = "invalid"
	DropNoEdge  = "no_edge"
)

// DefaultMinEdge is the fit edge below which an item is dropped as
// anti-discriminative even when the Fisher test cannot tell (one side has
// too few rollouts to reach its p).
const DefaultMinEdge = -0.1

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
	// MinEdge: an item whose edge on the fit half is below it is dropped
	// as anti-discriminative.
	MinEdge float64
	// Saturated95 drops items good on ≥ 95% of the fit rollouts as
	// saturated (discrim's Saturated95); otherwise only those good on all.
	Saturated95 bool
	// AntiAlpha is the Fisher p of discrim's anti-discriminative test (0:
	// discrim.DefaultAntiAlpha).
	AntiAlpha float64
	// MinSide is the fewest correct and the fewest flawed rollouts the fit
	// half must hold for the record to be refined; with fewer, one
	// rollout decides every edge, and the record is copied unchanged.
	MinSide int
}

// DefaultOptions are the settings `distill refine` uses without flags.
func DefaultOptions() Options { return Options{MinEdge: DefaultMinEdge, MinSide: DefaultMinSide} }

// DefaultMinSide is Options.MinSide without a flag.
const DefaultMinSide = 2

// UnmeasuredFewRollouts is the reason a record whose fit half holds
// fewer than Options.MinSide rollouts on a side is not refined.
const UnmeasuredFewRollouts = "few_rollouts_on_a_side"

// ItemDecision is what the refinement does with one item of a record.
type ItemDecision struct {
	ID   int32  `json:"id"` // in the source record
	Type string `json:"type"`
	// Edge is the item's edge on the fit half.
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

// Decision is the refinement of one record, measured on its fit half.
type Decision struct {
	ID string `json:"id"`
	// Unmeasured is why the record is copied unchanged ("" when it is
	// refined): its fit half lacks correct or flawed judged rollouts, or
	// it has no verdicts at all.
	Unmeasured string         `json:"unmeasured,omitempty"`
	Items      []ItemDecision `json:"items,omitempty"`
	// Held is the rubric AUROC on the held-out half before and after.
	Held HeldOut `json:"held_out"`
}

// HeldOut is a record's rubric AUROC on its held-out rollouts, with and
// without ANSWER items, before and after the refinement; a field is nil
// when it is undefined (the held-out half lacks a side, or no item but
// ANSWER items is left).
type HeldOut struct {
	Before         *float64 `json:"before"`
	After          *float64 `json:"after"`
	BeforeNoAnswer *float64 `json:"before_no_answer"`
	AfterNoAnswer  *float64 `json:"after_no_answer"`
}

// Changed reports whether the refinement changes the record.
// A measured record always changes: its weights are set anew.
func (d *Decision) Changed() bool { return d.Unmeasured == "" }

// Decide measures a record's verdicts (m, from discrim.FromRecord) on the
// fit half of discrim.Split and decides which items to keep and their
// weights; it measures the rubric AUROC before and after on the held-out
// half. storedWeights are the items' weights in the record, for the
// AUROC before.
func Decide(id string, m *discrim.Matrix, storedWeights []float64, opt Options) Decision {
	return decide(id, m, storedWeights, opt, nil)
}

// decide is Decide with veto, when not nil, saying why an item the
// statistics keep is dropped all the same ("" to keep it).
func decide(id string, m *discrim.Matrix, storedWeights []float64, opt Options, veto func(i int, edge float64) string) Decision {
	d := Decision{ID: id}
	fit, held := discrim.Split(m)
	st := discrim.Measure(m, fit, discrim.Options{AntiAlpha: opt.AntiAlpha})
	if st.Unmeasured != discrim.Measured {
		d.Unmeasured = st.Unmeasured.String()
		return d
	}
	if st.Correct < opt.MinSide || st.Flawed < opt.MinSide {
		d.Unmeasured = UnmeasuredFewRollouts
		return d
	}
	d.Items = make([]ItemDecision, len(m.Items))
	for i, s := range st.Items {
		d.Items[i] = ItemDecision{ID: s.ID, Type: s.Type, Edge: s.Edge, Drop: dropReason(s, opt)}
		if d.Items[i].Drop == "" && veto != nil {
			d.Items[i].Drop = veto(i, s.Edge)
		}
	}
	dropRedundant(d.Items, m, fit, st.Redundant)
	restoreForStyle(m.Style, d.Items)
	kept := keptPositions(d.Items)
	weights := Weights(m, fit, kept, edgesOf(d.Items, kept), m.Style)
	for k, i := range kept {
		d.Items[i].NewID, d.Items[i].Weight = int32(k+1), weights[k]
	}
	d.Held = heldOut(m, held, storedWeights, kept, weights)
	return d
}

// dropReason is why the statistics drop an item on their own, "" to keep
// it. ANSWER items are always kept: the srar style needs exactly one.
func dropReason(s discrim.ItemStats, opt Options) string {
	switch {
	case s.Type == schema.TypeAnswer:
		return ""
	case s.Dead:
		return DropDead
	case s.Saturated || (opt.Saturated95 && s.Saturated95):
		return DropSaturated
	case s.Anti || s.Edge < opt.MinEdge:
		return DropAnti
	}
	return ""
}

// dropRedundant drops one item of each redundant pair that is still whole:
// the one with the smaller edge (the later one on a tie), never an ANSWER
// item. Pairs are taken strongest first (equal vectors, then by
// correlation). A pair counts only when the two items also move together
// within the correct or the flawed rollouts (coMove): two items that agree
// only because each follows correctness are both doing their job.
func dropRedundant(items []ItemDecision, m *discrim.Matrix, fit []int, pairs []discrim.Pair) {
	pairs = slices.Clone(pairs)
	slices.SortStableFunc(pairs, func(a, b discrim.Pair) int {
		if a.Equal != b.Equal {
			if a.Equal {
				return -1
			}
			return 1
		}
		return cmp.Compare(nanLow(b.Corr), nanLow(a.Corr))
	})
	for _, p := range pairs {
		a, b := &items[p.A], &items[p.B]
		if a.Drop != "" || b.Drop != "" || !coMove(m, fit, p.A, p.B) {
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

// coMove reports whether items a and b, over the fit rollouts of one
// correctness side (correct or flawed), both vary and are equal or
// correlated at ≥ discrim.RedundantCorr.
func coMove(m *discrim.Matrix, fit []int, a, b int) bool {
	for _, side := range []bool{true, false} {
		var n, na, nb, nab int
		equal := true
		for _, r := range fit {
			if m.Correct[r] != side {
				continue
			}
			xa, xb := m.X(r, a), m.X(r, b)
			n++
			na += b2i(xa)
			nb += b2i(xb)
			nab += b2i(xa && xb)
			equal = equal && xa == xb
		}
		if na == 0 || na == n || nb == 0 || nb == n {
			continue
		}
		if equal || discrim.Phi(n, na, nb, nab) >= discrim.RedundantCorr {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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

// heldOut measures the rubric AUROC on the held-out rollouts with the
// stored weights over every item, and with the new weights over the kept
// items (discrim.AUROCWith; a weight of 0 leaves an item out), with and
// without ANSWER items. Weights count as the reward's weighted fraction
// takes them, |weight|, whatever the style.
func heldOut(m *discrim.Matrix, held []int, stored []float64, kept []int, weights []float64) HeldOut {
	before := absAll(stored)
	after := make([]float64, len(m.Items))
	for k, i := range kept {
		after[i] = weights[k]
	}
	return HeldOut{
		Before: auroc(m, held, before, true), BeforeNoAnswer: auroc(m, held, before, false),
		After: auroc(m, held, after, true), AfterNoAnswer: auroc(m, held, after, false),
	}
}

// auroc is discrim.AUROCWith, without the ANSWER items unless withAnswer;
// nil when undefined.
func auroc(m *discrim.Matrix, rollouts []int, weights []float64, withAnswer bool) *float64 {
	if !withAnswer {
		weights = slices.Clone(weights)
		for i, it := range m.Items {
			if it.Type == schema.TypeAnswer {
				weights[i] = 0
			}
		}
	}
	if v, ok := discrim.AUROCWith(m, rollouts, weights); ok {
		return &v
	}
	return nil
}

func absAll(ws []float64) []float64 {
	out := make([]float64, len(ws))
	for i, w := range ws {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			continue
		}
		out[i] = math.Abs(w)
	}
	return out
}
