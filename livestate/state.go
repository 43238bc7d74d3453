package livestate

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// Settings decide the live rubric's decisions. Each session of a state log
// logs the settings it ran with, and a replay uses the settings in force at
// each record.
type Settings struct {
	// Window is how many of a problem's most recent groups the statistics
	// cover.
	Window int `json:"window"`
	// MinRollouts is how many judged on-policy responses of the window an
	// item needs before it can be called saturated (or reinstated).
	MinRollouts int `json:"min_rollouts"`
	// Saturation: an item met (satisfied, or a PITFALL avoided) by at least
	// this share of the window's responses is saturated.
	Saturation float64 `json:"saturation"`
	// Reinstate: a retired item met by less than this share comes back.
	Reinstate float64 `json:"reinstate"`
	// Alpha and PenaltyCorr read an item's correlation as RLCER's validity
	// does (reward.Params).
	Alpha       float64 `json:"alpha"`
	PenaltyCorr string  `json:"penalty_corr,omitempty"`
	// RetireSaturated stops paying saturated items (--retire-saturated).
	RetireSaturated bool `json:"retire_saturated"`
	// AdmitGroups is how many groups an elicited candidate is measured over
	// before it is admitted (corr > Alpha, its satisfaction varying) or
	// dropped; MaxAdmitted caps the admitted criteria of a problem.
	AdmitGroups int `json:"admit_groups"`
	MaxAdmitted int `json:"max_admitted"`
}

// DefaultSettings: a window of 16 groups, at least 32 responses, saturated
// at 95% met, reinstated below 85%, α 0.2 sign-aware, candidates measured
// over 4 groups, at most 5 admitted per problem, nothing retired.
func DefaultSettings() Settings {
	return Settings{Window: 16, MinRollouts: 32, Saturation: 0.95, Reinstate: 0.85, Alpha: 0.2, AdmitGroups: 4, MaxAdmitted: 5}
}

// Check reports settings that cannot be used.
func (s Settings) Check() error {
	switch {
	case s.Window < 1 || s.Window > 4096:
		return fmt.Errorf("the window of %d groups is not from 1 to 4096", s.Window)
	case s.MinRollouts < 1:
		return fmt.Errorf("min rollouts %d is below 1", s.MinRollouts)
	case !(s.Saturation > 0 && s.Saturation <= 1):
		return fmt.Errorf("saturation %v is not in (0, 1]", s.Saturation)
	case !(s.Reinstate >= 0 && s.Reinstate < s.Saturation):
		return fmt.Errorf("reinstate %v is not in [0, saturation %v)", s.Reinstate, s.Saturation)
	case !(s.Alpha >= -1 && s.Alpha <= 1):
		return fmt.Errorf("alpha %v is not in [-1, 1]", s.Alpha)
	case s.AdmitGroups < 1 || s.AdmitGroups > s.Window:
		return fmt.Errorf("admit groups %d is not from 1 to the window, %d", s.AdmitGroups, s.Window)
	case s.MaxAdmitted < 0:
		return fmt.Errorf("max admitted %d is negative", s.MaxAdmitted)
	}
	return reward.Params{Alpha: s.Alpha, Epsilon: 1, RPit: -1, PenaltyCorr: s.PenaltyCorr}.Check()
}

// What an item of a live rubric is.
const (
	StatePaid      = "paid"      // in the rubric: paid
	StateRetired   = "retired"   // saturated: judged, not paid
	StateCandidate = "candidate" // elicited, judged valid, measured before it is admitted
	StateDropped   = "dropped"   // a candidate the groups did not show valid; no longer judged

	OriginCorpus   = "corpus"
	OriginElicited = "elicited"
)

// The kinds of the log's records.
const (
	recOpen      = "open"      // a session: its replica and settings
	recBase      = "base"      // a problem's rubric as loaded (or loaded anew)
	recGroup     = "group"     // a scored group's counts
	recRetire    = "retire"    // an item stops being paid
	recReinstate = "reinstate" // a retired item is paid again
	recCandidate = "candidate" // an elicited criterion the judge found valid
	recReject    = "reject"    // an elicited criterion the judge found invalid (evidence only)
	recAdmit     = "admit"     // a candidate joins the rubric
	recDrop      = "drop"      // a candidate the groups did not show valid
	recElicit    = "elicit"    // an elicitation's cost
)

// Evidence is why a decision was taken: the window's figures for the item
// (or, for a candidate, what it was elicited from and the judge's reason).
type Evidence struct {
	N       int      `json:"n,omitempty"`      // judged on-policy responses in the window
	Groups  int      `json:"groups,omitempty"` // groups in the window
	SatRate *float64 `json:"sat_rate,omitempty"`
	MetRate *float64 `json:"met_rate,omitempty"`
	Corr    *float64 `json:"corr,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Better  string   `json:"better,omitempty"` // the better response, cut to evidenceChars
	Worse   string   `json:"worse,omitempty"`
	Model   string   `json:"model,omitempty"`
}

// record is one line of the state log.
type record struct {
	T        string        `json:"t"`
	P        string        `json:"p,omitempty"`
	Replica  string        `json:"replica,omitempty"`
	At       string        `json:"at,omitempty"`
	Settings *Settings     `json:"settings,omitempty"`
	Hash     string        `json:"hash,omitempty"`
	Items    []schema.Item `json:"items,omitempty"`
	V        int64         `json:"v,omitempty"`
	H        string        `json:"h,omitempty"`
	S        string        `json:"s,omitempty"`
	N        int           `json:"n,omitempty"`
	Z        int           `json:"z,omitempty"`
	I        [][3]int      `json:"i,omitempty"` // per item: id, satisfied, satisfied and correct
	ID       int32         `json:"id,omitempty"`
	Ev       *Evidence     `json:"ev,omitempty"`
	Cost     float64       `json:"cost,omitempty"`
}

// liveItem is an item of a problem's live rubric.
type liveItem struct {
	schema.Item
	Origin   string
	State    string
	measured int // groups measured while a candidate
}

// groupEntry is one group's counts in a problem's window.
type groupEntry struct {
	n, z  int
	items [][3]int
}

// problem is the live state of one problem.
type problem struct {
	id      string
	base    string
	version int64
	scheme  string
	items   []liveItem // by id
	window  []groupEntry
	next    int   // where the next entry goes once the window is full
	groups  int64 // groups recorded since the base
	seen    []uint64
	events  []Event
	// unconfirmed are decisions a replay recomputed that the log has not
	// yet shown (a crash may have cut them off).
	unconfirmed []record
	elicited    int64 // the group count at the last elicitation
	view        *View
}

// View is the rubric a group of a problem is scored with.
type View struct {
	Version int64
	// Paid are the items paid, by id.
	Paid []schema.Item
	// Judged are the items the judge is asked about, by id: the paid ones,
	// the retired ones and the candidates.
	Judged []schema.Item
}

// RubricHash identifies a rubric as loaded: its items' ids, types, texts,
// weights and polarities.
func RubricHash(items []schema.Item) string {
	var d xxhash.Digest
	d.Reset()
	var b [8]byte
	for _, it := range items {
		binary.LittleEndian.PutUint64(b[:], uint64(it.ID))
		_, _ = d.Write(b[:])
		for _, s := range []string{it.Type, it.Text, strconv.FormatFloat(it.Weight, 'g', -1, 64), strconv.Itoa(int(it.Polarity))} {
			binary.LittleEndian.PutUint64(b[:], uint64(len(s)))
			_, _ = d.Write(b[:])
			_, _ = d.WriteString(s)
		}
	}
	return strconv.FormatUint(d.Sum64(), 16)
}

// reset makes p the problem of a rubric as loaded, at version v.
func (p *problem) reset(base string, items []schema.Item, v int64) {
	p.base, p.version, p.groups, p.next, p.elicited = base, v, 0, 0, 0
	p.window, p.seen, p.unconfirmed = nil, nil, nil
	p.items = make([]liveItem, len(items))
	for j, it := range items {
		if it.Polarity == 0 {
			it.Polarity = schema.PolarityOf(it.Type)
		}
		p.items[j] = liveItem{Item: it, Origin: OriginCorpus, State: StatePaid}
	}
	slices.SortFunc(p.items, func(a, b liveItem) int { return cmp.Compare(a.ID, b.ID) })
	p.view = nil
}

// currentView is p's view, rebuilt after a change.
func (p *problem) currentView() *View {
	if p.view != nil {
		return p.view
	}
	v := &View{Version: p.version, Paid: []schema.Item{}, Judged: []schema.Item{}}
	for _, it := range p.items {
		switch it.State {
		case StatePaid:
			v.Paid = append(v.Paid, it.Item)
			v.Judged = append(v.Judged, it.Item)
		case StateRetired, StateCandidate:
			v.Judged = append(v.Judged, it.Item)
		}
	}
	p.view = v
	return v
}

// item returns the live item with id, or nil.
func (p *problem) item(id int32) *liveItem {
	k, ok := slices.BinarySearchFunc(p.items, id, func(it liveItem, id int32) int { return cmp.Compare(it.ID, id) })
	if !ok {
		return nil
	}
	return &p.items[k]
}

// nextItemID is the id a new candidate gets: one after every id the
// problem has had.
func (p *problem) nextItemID() int32 {
	if len(p.items) == 0 {
		return 1
	}
	return p.items[len(p.items)-1].ID + 1
}

// seenGroup reports whether a group with hash h is among the recent ones.
func (p *problem) seenGroup(h uint64, window int) bool {
	if slices.Contains(p.seen, h) {
		return true
	}
	p.seen = append(p.seen, h)
	if len(p.seen) > 4*window {
		p.seen = p.seen[len(p.seen)-4*window:]
	}
	return false
}

// addGroup adds a group's counts to the window.
func (p *problem) addGroup(r *record, window int) {
	e := groupEntry{n: r.N, z: r.Z, items: r.I}
	if len(p.window) < window {
		p.window = append(p.window, e)
	} else {
		if len(p.window) > window { // the window shrank between sessions
			p.window = slices.Clone(p.window[len(p.window)-window:])
			p.next = 0
		}
		p.window[p.next] = e
		p.next = (p.next + 1) % window
	}
	p.groups++
	if r.S != "" {
		p.scheme = r.S
	}
	for _, c := range r.I {
		if it := p.item(int32(c[0])); it != nil && it.State == StateCandidate {
			it.measured++
		}
	}
}

// ItemStats are an item's counts over a problem's window.
type ItemStats struct {
	N, Groups, Sat, SatCorrect, Correct int
}

// stats are every item's counts over the window.
func (p *problem) stats() map[int32]*ItemStats {
	out := make(map[int32]*ItemStats, len(p.items))
	for _, e := range p.window {
		for _, c := range e.items {
			st := out[int32(c[0])]
			if st == nil {
				st = &ItemStats{}
				out[int32(c[0])] = st
			}
			st.N += e.n
			st.Groups++
			st.Sat += c[1]
			st.SatCorrect += c[2]
			st.Correct += e.z
		}
	}
	return out
}

// SatRate is the share of the responses that satisfied the item.
func (s ItemStats) SatRate() float64 { return float64(s.Sat) / float64(s.N) }

// MetRate is the share that met it: satisfied, or for a PITFALL avoided.
func (s ItemStats) MetRate(polarity int32) float64 {
	if polarity < 0 {
		return 1 - s.SatRate()
	}
	return s.SatRate()
}

// Corr is the correlation of satisfaction with correctness over the
// window's responses, read with polarity's sign; ok is false when either
// is constant.
func (s ItemStats) Corr(polarity int32) (float64, bool) {
	n := float64(s.N)
	if n == 0 {
		return 0, false
	}
	mv, mz := float64(s.Sat)/n, float64(s.Correct)/n
	vv, vz := mv*(1-mv), mz*(1-mz)
	if vv <= 0 || vz <= 0 {
		return 0, false
	}
	c := max(-1, min(1, (float64(s.SatCorrect)/n-mv*mz)/math.Sqrt(vv*vz)))
	if polarity < 0 {
		c = -c
	}
	return c, true
}

// validityPolarity is the sign an item's correlation is read with.
func (s Settings) validityPolarity(it schema.Item) int32 {
	if s.PenaltyCorr == reward.PenaltyLiteral {
		return 1
	}
	return reward.Polarity(it)
}

// evidence is the window's figures of an item.
func evidence(st *ItemStats, it schema.Item, set Settings) *Evidence {
	ev := &Evidence{N: st.N, Groups: st.Groups}
	if st.N > 0 {
		sat, met := st.SatRate(), st.MetRate(reward.Polarity(it))
		ev.SatRate, ev.MetRate = &sat, &met
		if c, ok := st.Corr(set.validityPolarity(it)); ok {
			ev.Corr = &c
		}
	}
	return ev
}

// decide takes the decisions the window calls for after a group, in item
// order, applies them and returns their records.
func (p *problem) decide(set Settings) []record {
	all := p.stats()
	var out []record
	admitted := 0
	for _, it := range p.items {
		if it.Origin == OriginElicited && it.State != StateCandidate && it.State != StateDropped {
			admitted++
		}
	}
	for k := range p.items {
		it := &p.items[k]
		st := all[it.ID]
		if st == nil {
			st = &ItemStats{}
		}
		kind := ""
		switch it.State {
		case StatePaid:
			if set.RetireSaturated && st.N >= set.MinRollouts && st.MetRate(reward.Polarity(it.Item)) >= set.Saturation {
				kind = recRetire
			}
		case StateRetired:
			if !set.RetireSaturated || st.N >= set.MinRollouts && st.MetRate(reward.Polarity(it.Item)) < set.Reinstate {
				kind = recReinstate
			}
		case StateCandidate:
			if it.measured >= set.AdmitGroups {
				c, ok := st.Corr(set.validityPolarity(it.Item))
				kind = recDrop
				if ok && c > set.Alpha && admitted < set.MaxAdmitted {
					kind = recAdmit
					admitted++
				}
			}
		}
		if kind == "" {
			continue
		}
		ev := evidence(st, it.Item, set)
		if kind == recReinstate && !set.RetireSaturated {
			ev.Reason = "retiring saturated items is off"
		}
		r := record{T: kind, P: p.id, ID: it.ID, Ev: ev}
		p.applyDecision(&r)
		out = append(out, r)
	}
	return out
}

// applyDecision applies a decision and sets its record's version.
func (p *problem) applyDecision(r *record) {
	it := p.item(r.ID)
	switch r.T {
	case recRetire:
		it.State = StateRetired
	case recReinstate, recAdmit:
		it.State = StatePaid
	case recDrop:
		it.State = StateDropped
	}
	if r.T != recDrop {
		p.version++
	}
	r.V = p.version
	p.view = nil
	p.events = append(p.events, eventOf(r, p.groups))
}

// addCandidate adds an elicited criterion as a candidate with the next id.
func (p *problem) addCandidate(r *record) {
	it := r.Items[0]
	it.ID = r.ID
	p.items = append(p.items, liveItem{Item: it, Origin: OriginElicited, State: StateCandidate})
	p.view = nil
	p.elicited = p.groups
	p.events = append(p.events, eventOf(r, p.groups))
}

// Event is a decision or an elicitation of a problem's live rubric, with
// its evidence.
type Event struct {
	Kind     string    `json:"event"` // retire, reinstate, candidate, reject, admit, drop
	Item     int32     `json:"id,omitempty"`
	Text     string    `json:"text,omitempty"` // a candidate's or a rejected criterion's
	Version  int64     `json:"rubric_version,omitempty"`
	AtGroup  int64     `json:"at_group"` // the problem's groups recorded when it happened
	Evidence *Evidence `json:"evidence,omitempty"`
}

func eventOf(r *record, groups int64) Event {
	e := Event{Kind: r.T, Item: r.ID, Version: r.V, AtGroup: groups, Evidence: r.Ev}
	if len(r.Items) > 0 {
		e.Text = r.Items[0].Text
	}
	return e
}

// sameDecision reports whether a logged decision is the one recomputed.
func sameDecision(a, b *record) bool {
	return a.T == b.T && a.P == b.P && a.ID == b.ID && a.V == b.V
}
