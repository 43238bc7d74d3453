package reward

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestValuesJSON checks that Values encode byte for byte as encoding/json
// encodes the same map, and fail where it fails.
func TestValuesJSON(t *testing.T) {
	const seed = 11
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	nums := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, -2.5e-9, 1e20, 1e21, 1.5e21,
		-1e300, 5e-324, math.MaxFloat64, 123456789.125, 0.8, -0.2, 3, -7, 10, 1e15 - 1, 1e15, -1e15 + 1, -1e15,
		1 << 53, 1<<53 + 2, -(1 << 62), 1 << 63, 9.2233720368547e18, 1e19}
	for range 300 {
		nums = append(nums, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(60)-30)), float64(rng.Int64N(1<<40)-1<<39))
	}
	cases := []Values{nil, {}, {"a<b": 1, "x": 2}, {"ключ": 0.5}, {"q\"": 1}}
	for i := 0; i+6 <= len(nums); i += 3 {
		cases = append(cases, Values{"accuracy": nums[i], "format": nums[i+1], "suggest": nums[i+2],
			"pitfall": nums[i+3], "bonus": nums[i+4], "n_items": nums[i+5]})
	}
	for _, v := range cases {
		got, err := json.Marshal(v)
		want, werr := json.Marshal(map[string]float64(v))
		if err != nil || werr != nil || string(got) != string(want) {
			t.Errorf("Values %v: got %s (%v), want %s (%v)", map[string]float64(v), got, err, want, werr)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if b, err := json.Marshal(Values{"x": bad}); err == nil {
			t.Errorf("Values{x: %v} encoded as %s, want an error", bad, b)
		}
	}
}
