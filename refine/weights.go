package refine

import (
	"math"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// Weights are the kept items' new weights (docs/refine.md, "Weights"):
// item k's raw weight is its edge (at least edgeFloor) over its
// redundancy, the sum of the positive within-label correlations
// (discrim.WithinPhi, RRD's) of its good-side values with every kept
// item's over the rollouts at pos (nil: all), itself included (1; an item
// constant within both labels correlates 0 with the others):
//
//	raw_k = max(e_k, 0.05) / Σ_l max(ρ_kl, 0)
//
// so an item that stands alone keeps its edge, n items that say the same
// thing share one item's weight, and two items that each follow
// correctness, or that move against each other, share nothing. The
// factual_process style needs integer weights 1-5: w_k = max(1,
// round(5 raw_k / max raw)). The other styles take raw_k over the mean raw
// weight, rounded to 3 decimals (at least 0.001), so the weights average
// about 1.
func Weights(m *discrim.Matrix, pos []int, kept []int, edges []float64, style string) []float64 {
	raw := make([]float64, len(kept))
	rho := make([]float64, len(kept)*len(kept))
	for k, i := range kept {
		for l := k + 1; l < len(kept); l++ {
			if r := discrim.WithinPhi(m, pos, i, kept[l]); r > 0 {
				rho[k*len(kept)+l], rho[l*len(kept)+k] = r, r
			}
		}
	}
	for k := range kept {
		redundancy := 1.0
		for l := range kept {
			if l != k {
				redundancy += rho[k*len(kept)+l]
			}
		}
		raw[k] = max(edges[k], edgeFloor) / redundancy
	}
	out := make([]float64, len(raw))
	if style == schema.StyleFactualProcess {
		top := 0.0
		for _, r := range raw {
			top = max(top, r)
		}
		for k, r := range raw {
			out[k] = max(1, math.Round(5*r/top))
		}
		return out
	}
	mean := 0.0
	for _, r := range raw {
		mean += r / float64(len(raw))
	}
	for k, r := range raw {
		out[k] = max(0.001, math.Round(1000*r/mean)/1000)
	}
	return out
}
