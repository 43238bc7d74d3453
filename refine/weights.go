package refine

import (
	"math"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// Weights are the kept items' new weights (docs/refine.md, "Weights"):
// item k's raw weight is its fit edge (at least edgeFloor) over its
// redundancy, the sum of the absolute correlations (phi) of its fit
// good-side vector with every kept item's, itself included (1; a constant
// vector correlates 0 with the others):
//
//	raw_k = max(e_k, 0.05) / Σ_l |ρ_kl|
//
// so an item that stands alone keeps its edge, and n items that say the
// same thing share one item's weight. The factual_process style needs
// integer weights 1-5: w_k = max(1, round(5 raw_k / max raw)). The other
// styles take raw_k over the mean raw weight, rounded to 3 decimals (at
// least 0.001), so the weights average about 1.
func Weights(m *discrim.Matrix, fit []int, kept []int, edges []float64, style string) []float64 {
	raw := make([]float64, len(kept))
	for k, i := range kept {
		redundancy := 0.0
		for l, j := range kept {
			if l == k {
				redundancy++
				continue
			}
			if rho := phiOver(m, fit, i, j); !math.IsNaN(rho) {
				redundancy += math.Abs(rho)
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

// phiOver is the correlation of items i and j's good-side values over the
// given rollouts; NaN when either is constant.
func phiOver(m *discrim.Matrix, rollouts []int, i, j int) float64 {
	var na, nb, nab int
	for _, r := range rollouts {
		xa, xb := m.X(r, i), m.X(r, j)
		na += b2i(xa)
		nb += b2i(xb)
		nab += b2i(xa && xb)
	}
	return discrim.Phi(len(rollouts), na, nb, nab)
}
