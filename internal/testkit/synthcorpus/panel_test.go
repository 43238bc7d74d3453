package synthcorpus

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/schema"
)

// TestAddPanel: the stored verdicts become the majority of the stored
// votes (a failed judge against), a judge without errors votes the truth,
// a judge that always fails gives no verdict, the empirical figures still
// match the rollouts' verdicts, and the same seed gives the same panel.
func TestAddPanel(t *testing.T) {
	judges := []PanelJudge{{Name: "exact", Model: "m1"}, {Name: "noisy", Model: "m2", FalseValid: 0.4, FalseInvalid: 0.3}, {Name: "mute", Model: "m3", Fail: 1}}
	o := Options{Records: 40, Seed: 3}
	for i := range o.Records {
		truth, _ := o.Record(i)
		for k := range truth.Rubric {
			truth.Rubric[k].Valid = ptrBool(k%3 != 0) // every item judged, some invalid
		}
		rec := deepCopy(t, truth)
		AddPanel(&rec, 9, judges...)
		again := deepCopy(t, truth)
		AddPanel(&again, 9, judges...)
		if !reflect.DeepEqual(rec, again) {
			t.Fatalf("record %d: the same seed gave another panel", i)
		}
		if len(rec.Panel.Judges) != 6 || len(rec.Panel.Validity) != len(rec.Rubric) || len(rec.Panel.Satisfaction) != len(rec.Rollouts) {
			t.Fatalf("record %d: panel %+v", i, rec.Panel)
		}
		for k, iv := range rec.Panel.Validity {
			exact, noisy, mute := iv.Verdicts[0].Valid, iv.Verdicts[1].Valid, iv.Verdicts[2].Valid
			if exact == nil || *exact != *truth.Rubric[k].Valid || noisy == nil || mute != nil {
				t.Fatalf("record %d item %d: votes %+v, truth %v", i, k, iv.Verdicts, *truth.Rubric[k].Valid)
			}
			if want := *exact && *noisy; *rec.Rubric[k].Valid != want {
				t.Errorf("record %d item %d: stored %v; two of three valid needs both answering judges (the third failed)", i, k, *rec.Rubric[k].Valid)
			}
		}
		for r, rv := range rec.Panel.Satisfaction {
			for k, s := range rec.Rollouts[r].Satisfaction {
				votes := make([]judgestats.Vote, len(rv.Judges))
				for j, js := range rv.Judges {
					if !js.Failed {
						votes[j] = judgestats.Vote{OK: true, Yes: js.Satisfaction[k].Satisfied}
					}
				}
				it := rec.Rubric[k]
				if s.Satisfied != judgestats.Met(votes, it.Polarity < 0 || it.Weight < 0) {
					t.Fatalf("record %d rollout %d item %d: stored %v, votes %+v", i, r, k, s.Satisfied, votes)
				}
			}
		}
		for k, it := range rec.Rubric {
			sat := 0.0
			for _, ro := range rec.Rollouts {
				if ro.Satisfaction[k].Satisfied {
					sat++
				}
			}
			if it.SatRate == nil || *it.SatRate != sat/float64(len(rec.Rollouts)) {
				t.Errorf("record %d item %d: sat_rate %v, the panel's verdicts give %v", i, k, it.SatRate, sat/float64(len(rec.Rollouts)))
			}
		}
	}
}

func ptrBool(b bool) *bool { return &b }

// deepCopy copies a record through JSON, so the panel's edits do not reach
// the original.
func deepCopy(t *testing.T, r schema.Record) schema.Record {
	t.Helper()
	var out schema.Record
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
