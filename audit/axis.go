package audit

import (
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
)

// Colours of validity, from the Okabe-Ito palette, which readers with
// the common forms of colour blindness (deuteranopia among them) tell
// apart; invalid parts are hatched as well, so that no state is told by
// colour alone.
const (
	colorValid    = "#0072b2" // blue
	colorInvalid  = "#d55e00" // vermillion
	colorUnjudged = "#bbbbbb" // grey
)

// rateSteps are the tick steps of a rate axis, in percentage points.
var rateSteps = []int{1, 2, 5, 10, 20, 25}

// rateAxis is the axis of a chart of rates whose lowest point is lo: from
// a round percentage at or below min(lo, 90%) to 100%, ticked every step
// of rateSteps that gives at most five intervals.
func rateAxis(lo float64) (start float64, ticks []float64) {
	low := int(math.Floor(math.Max(0, math.Min(lo, 0.9))*100 + 1e-9))
	for _, step := range rateSteps {
		from := low - low%step
		if (100-from)/step <= 5 {
			for v := from; v <= 100; v += step {
				ticks = append(ticks, float64(v)/100)
			}
			return float64(from) / 100, ticks
		}
	}
	return 0, []float64{0, 0.25, 0.5, 0.75, 1}
}

// patternID is an id for the patterns of the chart titled title, unique
// among the charts of one page.
func patternID(title string) string {
	return fmt.Sprintf("hatch-%08x", uint32(xxhash.Sum64String(title)))
}

// hatchPattern defines the invalid parts' fill: vermillion with white
// diagonal stripes.
func hatchPattern(id string) string {
	return fmt.Sprintf(`<defs><pattern id="%s" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">`+
		`<rect width="6" height="6" fill="%s"/><rect width="2" height="6" fill="#ffffff" fill-opacity="0.75"/></pattern></defs>`, id, colorInvalid)
}
