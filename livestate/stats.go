package livestate

import (
	"cmp"
	"slices"

	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// ProblemStats is a problem's live rubric with each item's window figures
// and the decisions taken, as GET /v1/rubric_stats and distill refine
// --from-stats read it.
type ProblemStats struct {
	Problem      string       `json:"problem_id"`
	Replica      string       `json:"replica"`
	Version      int64        `json:"rubric_version"`
	RubricHash   string       `json:"rubric_hash"`      // RubricHash of the rubric as loaded
	Scheme       string       `json:"scheme,omitempty"` // of its last group
	Groups       int64        `json:"groups"`           // recorded since its rubric was loaded
	WindowGroups int          `json:"window_groups"`    // in the window now
	Items        []ItemReport `json:"items"`
	Events       []Event      `json:"events"`
}

// ItemReport is one item of a live rubric with its window figures.
type ItemReport struct {
	ID       int32    `json:"id"`
	Type     string   `json:"type"`
	Text     string   `json:"text"`
	Weight   float64  `json:"weight"`
	Polarity int32    `json:"polarity"`
	Origin   string   `json:"origin"` // corpus or elicited
	State    string   `json:"state"`  // paid, retired, candidate or dropped
	N        int      `json:"n"`      // judged on-policy responses in the window
	Groups   int      `json:"groups"`
	SatRate  *float64 `json:"sat_rate"` // satisfied (for a PITFALL: fallen into); null without responses
	MetRate  *float64 `json:"met_rate"` // met (for a PITFALL: avoided)
	Corr     *float64 `json:"corr"`     // with correctness, read as the settings say; null when either is constant
	// Saturated: at least Settings.MinRollouts responses, met by at least
	// Settings.Saturation of them. AntiCorrelated: as many responses, and
	// corr below -α.
	Saturated      bool `json:"saturated"`
	AntiCorrelated bool `json:"anti_correlated"`
}

// report is p's stats under set.
func (p *problem) report(replica string, set Settings) ProblemStats {
	out := ProblemStats{Problem: p.id, Replica: replica, Version: p.version, RubricHash: p.base, Scheme: p.scheme, Groups: p.groups,
		WindowGroups: len(p.window), Items: make([]ItemReport, 0, len(p.items)), Events: slices.Clone(p.events)}
	if out.Events == nil {
		out.Events = []Event{}
	}
	all := p.stats()
	for _, it := range p.items {
		st := all[it.ID]
		if st == nil {
			st = &ItemStats{}
		}
		ev := evidence(st, it.Item, set)
		r := ItemReport{ID: it.ID, Type: it.Type, Text: it.Text, Weight: it.Weight, Polarity: reward.Polarity(it.Item), Origin: it.Origin, State: it.State,
			N: st.N, Groups: st.Groups, SatRate: ev.SatRate, MetRate: ev.MetRate, Corr: ev.Corr}
		if st.N >= set.MinRollouts {
			r.Saturated = *ev.MetRate >= set.Saturation
			r.AntiCorrelated = ev.Corr != nil && *ev.Corr < -set.Alpha
		}
		out.Items = append(out.Items, r)
	}
	return out
}

// Stats returns a problem's live statistics; ok is false for a problem
// this replica has not seen.
func (s *Store) Stats(problemID string) (ProblemStats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.probs[problemID]
	if p == nil {
		return ProblemStats{}, false
	}
	return p.report(s.opt.Replica, s.opt.Settings), true
}

// SchemeSummary counts a scheme's problems and items (the scheme of each
// problem's last group).
type SchemeSummary struct {
	Scheme         string `json:"scheme"`
	Problems       int    `json:"problems"`
	Groups         int64  `json:"groups"`
	Items          int    `json:"items"` // paid and retired
	Saturated      int    `json:"saturated"`
	AntiCorrelated int    `json:"anti_correlated"`
	Retired        int    `json:"retired"`
	Candidates     int    `json:"candidates"`
	Admitted       int    `json:"admitted"`
	Dropped        int    `json:"dropped"`
}

// Summary counts every problem's items by scheme, in scheme order.
func (s *Store) Summary() []SchemeSummary {
	s.mu.Lock()
	reports := make([]ProblemStats, 0, len(s.probs))
	for _, p := range s.probs {
		reports = append(reports, p.report(s.opt.Replica, s.opt.Settings))
	}
	s.mu.Unlock()
	return Summarize(reports)
}

// Summarize counts problems' items by scheme.
func Summarize(reports []ProblemStats) []SchemeSummary {
	by := map[string]*SchemeSummary{}
	for _, r := range reports {
		scheme := cmp.Or(r.Scheme, "none")
		sum := by[scheme]
		if sum == nil {
			sum = &SchemeSummary{Scheme: scheme}
			by[scheme] = sum
		}
		sum.Problems++
		sum.Groups += r.Groups
		for _, it := range r.Items {
			switch it.State {
			case StateCandidate:
				sum.Candidates++
				continue
			case StateDropped:
				sum.Dropped++
				continue
			case StateRetired:
				sum.Retired++
			}
			sum.Items++
			if it.Origin == OriginElicited {
				sum.Admitted++
			}
			if it.Saturated {
				sum.Saturated++
			}
			if it.AntiCorrelated {
				sum.AntiCorrelated++
			}
		}
	}
	out := make([]SchemeSummary, 0, len(by))
	for _, v := range by {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b SchemeSummary) int { return cmp.Compare(a.Scheme, b.Scheme) })
	return out
}

// PaidItems is the rubric a report pays: its paid items, by id.
func (r *ProblemStats) PaidItems() []schema.Item {
	var out []schema.Item
	for _, it := range r.Items {
		if it.State == StatePaid {
			out = append(out, schema.Item{ID: it.ID, Type: it.Type, Text: it.Text, Weight: it.Weight, Polarity: it.Polarity})
		}
	}
	return out
}
