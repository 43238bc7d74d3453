package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// orderRejudged is an order check of one judge over groups of three items
// of which the first earlier groups call item 0 valid only where it came
// first, and the first later groups call it valid only where it came last;
// every other verdict is the same in both orders.
func orderRejudged(groups, earlier, later int) *Rejudged {
	x := &Rejudged{Judges: []RejudgeJudge{{Name: "j"}}}
	for g := range groups {
		var items []SampleItem
		var fwd, rev []ComparedItem
		for i := range 3 {
			id := fmt.Sprintf("r%d", g)
			items = append(items, SampleItem{RecordID: id, ItemID: int32(i + 1), Type: "SUGGEST", Stored: ptr(true)})
			f, r := true, true
			if i == 0 && g < earlier {
				r = false // valid shown first (forward), invalid shown last (reversed)
			}
			if i == 0 && g >= earlier && g < earlier+later {
				f = false // invalid shown first, valid shown last
			}
			fwd = append(fwd, ComparedItem{RecordID: id, ItemID: int32(i + 1), Type: "SUGGEST", Stored: true, Other: f})
			rev = append(rev, ComparedItem{RecordID: id, ItemID: int32(i + 1), Type: "SUGGEST", Stored: true, Other: r})
		}
		x.Groups = append(x.Groups, items)
		x.Forward = append(x.Forward, []JudgeAnswer{{Items: fwd, Asked: true}})
		x.Reversed = append(x.Reversed, []JudgeAnswer{{Items: rev, Asked: true}})
	}
	return x
}

// TestOrderCheckPositionBias: the order check reports each judge's
// position bias, the share of items called valid only where shown earlier
// minus the share called valid only where shown later, with its 95%
// interval for a paired difference (Agresti and Min: half an item added to
// each of the four cells, then Wald), in JSON and in the text; a bias
// toward the later item is negative, and none measures 0 inside its
// interval.
func TestOrderCheckPositionBias(t *testing.T) {
	t.Parallel()
	type flip struct {
		Type     string   `json:"type"`
		Bias     *float64 `json:"position_bias"`
		Interval *struct {
			Low  float64 `json:"low"`
			High float64 `json:"high"`
		} `json:"position_bias_interval"`
	}
	// 30 items (10 groups of 3); b items valid only earlier, c only later:
	// n* = 32, d = (b - c)/32, var = ((b + c + 1)/32 - d^2)/32.
	for _, c := range []struct {
		earlier, later  int
		bias, low, high float64
	}{
		{3, 0, 3.0 / 32, 3.0/32 - 1.959964*math.Sqrt((4.0/32-math.Pow(3.0/32, 2))/32), 3.0/32 + 1.959964*math.Sqrt((4.0/32-math.Pow(3.0/32, 2))/32)},
		{0, 3, -3.0 / 32, -3.0/32 - 1.959964*math.Sqrt((4.0/32-math.Pow(3.0/32, 2))/32), -3.0/32 + 1.959964*math.Sqrt((4.0/32-math.Pow(3.0/32, 2))/32)},
		{0, 0, 0, -1.959964 * math.Sqrt(1.0/32/32), 1.959964 * math.Sqrt(1.0/32/32)},
	} {
		rep := &AgreementReport{Sample: &SampleInfo{}, Disagreements: []Disagreement{}}
		rep.AddRejudged(orderRejudged(10, c.earlier, c.later))
		var out struct {
			OrderCheck struct {
				Judges []struct {
					ByType []flip `json:"by_type"`
				} `json:"judges"`
			} `json:"order_check"`
		}
		var b strings.Builder
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(b.String()), &out); err != nil {
			t.Fatal(err)
		}
		all := out.OrderCheck.Judges[0].ByType[0]
		if all.Bias == nil || all.Interval == nil || math.Abs(*all.Bias-c.bias) > 1e-9 ||
			math.Abs(all.Interval.Low-c.low) > 1e-4 || math.Abs(all.Interval.High-c.high) > 1e-4 {
			t.Errorf("%d earlier, %d later: bias %v in %+v; want %.4f in [%.4f, %.4f]", c.earlier, c.later, all.Bias, all.Interval, c.bias, c.low, c.high)
		}
		var text strings.Builder
		if err := rep.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%+.1f%%", 100*c.bias); !strings.Contains(text.String(), "position bias") || !strings.Contains(text.String(), want) {
			t.Errorf("%d earlier, %d later: the text shows no position bias %s:\n%s", c.earlier, c.later, want, text.String())
		}
	}
}
