package judgestats

import (
	"math"
	"testing"
)

// TestPairedDifference: the Agresti-Min estimate and interval of a
// difference of matched proportions, worked by hand: 100 pairs, 12
// discordant one way and 4 the other: 102 pairs with 12.5 and 4.5, d =
// 8/102 = 0.078431, var = ((17/102) - d^2)/102 = 0.0015737, half =
// 1.96 * 0.039670 = 0.077751; no discordant pair still has width; and
// nothing to estimate from, or more discordant pairs than pairs, is not ok.
func TestPairedDifference(t *testing.T) {
	t.Parallel()
	d, iv, ok := PairedDifference(12, 4, 100, Z95)
	if !ok || math.Abs(d-0.078431) > 1e-5 || math.Abs(iv.Low-0.000680) > 1e-5 || math.Abs(iv.High-0.156182) > 1e-5 {
		t.Errorf("12 and 4 of 100: %.6f in %+v", d, iv)
	}
	d, iv, ok = PairedDifference(0, 0, 50, Z95)
	if !ok || d != 0 || iv.Low >= 0 || iv.High <= 0 || math.Abs(iv.High+iv.Low) > 1e-12 {
		t.Errorf("none discordant: %v in %+v; want 0 inside a symmetric interval", d, iv)
	}
	if d, iv, ok = PairedDifference(30, 0, 30, Z95); !ok || iv.High > 1 || iv.Low < 0.8 || d < 0.9 {
		t.Errorf("all discordant one way: %v in %+v", d, iv)
	}
	for _, c := range [][3]int64{{0, 0, 0}, {3, 4, 5}, {-1, 0, 5}} {
		if _, _, ok := PairedDifference(c[0], c[1], c[2], Z95); ok {
			t.Errorf("%v: ok", c)
		}
	}
}
