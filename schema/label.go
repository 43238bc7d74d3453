package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Reward schemes: how a response is scored against a rubric.
const (
	SchemeSRaR     = "srar"     // SUGGEST/PITFALL/BONUS budgets per step (seed 000)
	SchemeRGR      = "rgr"      // RGR-GRPO: 1 when every Factual item holds, else the weighted fraction (seed 003)
	SchemeGrounded = "grounded" // Rubric-Grounded RL: weighted score normalized by total weight (seed 001)
	SchemeRLCER    = "rlcer"    // RLCER: min-max normalized signed points over valid items (seed 002)
	SchemePAPO     = "papo"     // PAPO: outcome plus process advantage among correct rollouts (seed 004)
)

// Schemes lists every reward scheme.
var Schemes = []string{SchemeSRaR, SchemeRGR, SchemeGrounded, SchemeRLCER, SchemePAPO}

// DefaultScheme is the reward scheme a rubric of style is made for.
func DefaultScheme(style string) string {
	if style == StyleFactualProcess {
		return SchemeRGR
	}
	return SchemeSRaR
}

// Label is the reward spec of one problem: everything a reward scorer needs
// to score a response to it, without the corpus at hand. `distill export`
// writes it as the `label` column (a JSON string, read by OpenRLHF's
// --data.label_key and slime), and rewardd accepts it in requests.
type Label struct {
	V           string `json:"v"` // SpecVersion of the corpus it came from
	ID          string `json:"id"`
	DataSource  string `json:"data_source"`
	Scheme      string `json:"scheme"` // the default reward scheme
	Style       string `json:"style"`
	Question    string `json:"question"`
	GroundTruth string `json:"ground_truth"`
	Rubric      []Item `json:"rubric"`
}

// LabelOf is the label of rec: its rubric with the judge's verdicts and the
// empirical figures, under the style's default scheme.
func LabelOf(rec *Record) Label {
	return Label{
		V: SpecVersion, ID: rec.ID, DataSource: rec.Source, Scheme: DefaultScheme(rec.Style), Style: rec.Style,
		Question: rec.Problem, GroundTruth: rec.Answer, Rubric: slices.Clone(rec.Rubric),
	}
}

// maxLabelBytes bounds a label; real ones are a few KiB.
const maxLabelBytes = 4 << 20

// MaxLabelWeight bounds the magnitude of a label item's weight. Rubric
// weights are small (1-5 for factual_process, 1 for srar; custom rubrics
// use points up to a few hundred); the bound keeps every sum of the
// weights a 4 MiB label can hold, and every formula over them, finite.
const MaxLabelWeight = 1e6

// ParseLabel decodes and checks a label. Unknown keys are ignored (a newer
// writer may add some); every error names the field, e.g.
// `label.rubric[2].type: "FOO" is not a rubric item type`. A zero polarity
// is filled in from the item type.
func ParseLabel(data []byte) (Label, error) {
	var l Label
	if len(data) > maxLabelBytes {
		return l, fmt.Errorf("label: %d bytes is more than the %d allowed", len(data), maxLabelBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return l, errors.New("label: expected a JSON object")
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return l, fmt.Errorf("label: %w", err)
	}
	return l, l.check()
}

func (l *Label) check() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("label.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if l.Scheme != "" && !slices.Contains(Schemes, l.Scheme) {
		bad("scheme", "%q is not one of %s", l.Scheme, strings.Join(Schemes, ", "))
	}
	if l.Style != "" && l.Style != StyleSRaR && l.Style != StyleFactualProcess {
		bad("style", "%q is not %s or %s", l.Style, StyleSRaR, StyleFactualProcess)
	}
	if len(l.Rubric) == 0 {
		bad("rubric", "no items")
	}
	seen := map[int32]bool{}
	for i := range l.Rubric {
		it := &l.Rubric[i]
		f := fmt.Sprintf("rubric[%d]", i)
		switch {
		case it.ID < 1:
			bad(f+".id", "%d is not a positive item id", it.ID)
		case seen[it.ID]:
			bad(f+".id", "%d appears twice", it.ID)
		}
		seen[it.ID] = true
		if !slices.Contains(ItemTypes, it.Type) {
			bad(f+".type", "%q is not a rubric item type (%s)", it.Type, strings.Join(ItemTypes, ", "))
		}
		if strings.TrimSpace(it.Text) == "" {
			bad(f+".text", "empty")
		}
		if math.IsNaN(it.Weight) || math.IsInf(it.Weight, 0) || math.Abs(it.Weight) > MaxLabelWeight {
			bad(f+".weight", "%g is out of range: a weight must be a number from -%g to %g", it.Weight, MaxLabelWeight, MaxLabelWeight)
		}
		switch it.Polarity {
		case 0:
			it.Polarity = PolarityOf(it.Type)
		case 1, -1:
		default:
			bad(f+".polarity", "%d is not 1 or -1", it.Polarity)
		}
	}
	return errors.Join(errs...)
}
