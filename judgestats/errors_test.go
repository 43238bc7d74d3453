package judgestats

import (
	"math"
	"testing"
)

// TestPanelErrorsByHand: three judges wrong independently at 0.05, 0.1 and
// 0.2 disagree pairwise at e_i + e_j − 2·e_i·e_j (0.14, 0.23, 0.26); the
// error rates come back from those, and the strict majority of the three is
// wrong when at least two are: 0.05·0.1·0.8 + 0.05·0.2·0.9 + 0.1·0.2·0.95 +
// 0.05·0.1·0.2 = 0.033.
func TestPanelErrorsByHand(t *testing.T) {
	e := []float64{0.05, 0.1, 0.2}
	dis := make([][]float64, 3)
	for i := range dis {
		dis[i] = make([]float64, 3)
		for j := range dis[i] {
			if i != j {
				dis[i][j] = e[i] + e[j] - 2*e[i]*e[j]
			}
		}
	}
	got, ok := PanelErrors(dis)
	if !ok {
		t.Fatal("no estimate from three judges")
	}
	for i := range e {
		if math.Abs(got[i]-e[i]) > 1e-9 {
			t.Errorf("judge %d: error %v; want %v", i, got[i], e[i])
		}
	}
	if m := MajorityError(e); math.Abs(m-0.033) > 1e-12 {
		t.Errorf("majority error %v; want 0.033", m)
	}
	if _, ok := PanelErrors([][]float64{{0}}); ok {
		t.Error("an estimate from one judge")
	}
	// Two judges: the disagreement split evenly; a strict majority of two
	// needs both, so the panel errs as one judge does, about.
	two, ok := PanelErrors([][]float64{{0, 0.18}, {0.18, 0}})
	if !ok || math.Abs(two[0]-0.1) > 1e-9 || math.Abs(two[1]-0.1) > 1e-9 {
		t.Errorf("two judges disagreeing at 0.18: %v, %v; want 0.1 each", two, ok)
	}
}
