package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// A live rubric (Config.Live, --state-dir): each group of a problem is
// scored with the problem's rubric of the moment (its view: a version that
// does not change inside the group), its counts go into the problem's
// window, and the decisions the window calls for move the rubric for the
// next groups.

// What a group of a problem another replica keeps gets (Config.SplitState).
const (
	SplitStateRefuse = "refuse"
	SplitStateWarn   = "warn"
)

// liveState is the server's side of the live rubrics.
type liveState struct {
	split   atomic.Int64 // groups of problems another replica keeps, scored without the live rubric
	splitLg everyLog
}

// viewError is why a group has no view: code is the HTTP status to answer.
type viewError struct {
	code int
	err  error
}

func (e *viewError) Error() string { return e.err.Error() }

// viewOf is the rubric a group of lab's problem is scored with, begun in
// the live state when there is one.
func (s *Server) viewOf(lab *schema.Label) (rubricView, *viewError) {
	if s.cfg.Live == nil {
		return staticView(lab), nil
	}
	v, err := s.cfg.Live.Begin(lab)
	switch {
	case errors.Is(err, livestate.ErrClaimed) && s.cfg.SplitState == SplitStateWarn:
		n := s.live.split.Add(1)
		if since, ok := s.live.splitLg.allow(time.Now(), n); ok {
			s.log.Warn("a group of a problem another replica keeps, scored with the corpus's rubric and not recorded; send each problem's groups to one replica",
				"error", err.Error(), "groups_since_last_line", since, "groups_so_far", n)
		}
		return staticView(lab), nil
	case errors.Is(err, livestate.ErrClaimed):
		return rubricView{}, &viewError{http.StatusConflict, fmt.Errorf("%w (rewardd --split-state warn scores it with the corpus's rubric instead)", err)}
	case err != nil:
		return rubricView{}, &viewError{http.StatusServiceUnavailable, fmt.Errorf("live state: %w", err)}
	}
	return liveView(lab, v), nil
}

// liveView is the view of a live rubric: its paid items scored, every
// judged item asked about.
func liveView(lab *schema.Label, v *livestate.View) rubricView {
	scored := *lab
	scored.Rubric = v.Paid
	at := make([]int, 0, len(v.Paid))
	for j, it := range v.Judged {
		for _, p := range v.Paid {
			if p.ID == it.ID {
				at = append(at, j)
				break
			}
		}
	}
	return rubricView{Scored: &scored, Judged: v.Judged, PaidAt: at, Version: v.Version, recorded: true}
}

// liveLabel is the label a single response of lab's problem is scored
// with (/v1/score, /get_reward, ...): the live rubric's paid items when
// this replica keeps the problem, and its version; lab as it is
// otherwise. Single responses do not move the statistics.
func (s *Server) liveLabel(lab *schema.Label) (*schema.Label, int64) {
	if s.cfg.Live == nil || lab.Grounded != nil {
		return lab, 0
	}
	v, ok := s.cfg.Live.Peek(lab)
	if !ok {
		return lab, 0
	}
	out := *lab
	out.Rubric = v.Paid
	return &out, v.Version
}

// extraLogVersion is the extra_logs key of /get_reward under --state-dir:
// the live rubric's version each sample was scored with, the
// rubric_version the other protocols' results name (0: a sample of no live
// rubric, scored with the corpus's).
const extraLogVersion = "rubric/version"

// logRubricVersions adds rubric/version to /get_reward's extra_logs under
// --state-dir; without it the key is absent, as rubric_version is.
func (s *Server) logRubricVersions(logs map[string][]float64, results []reward.Result) {
	if s.cfg.Live == nil {
		return
	}
	v := make([]float64, len(results))
	for i, r := range results {
		v[i] = float64(r.RubricVersion)
	}
	logs[extraLogVersion] = v
}

// recordLive adds a scored group to its problem's window: the on-policy
// responses whose judgment did not fail, with their verdicts on every
// judged item.
func (s *Server) recordLive(lab *schema.Label, scheme string, view rubricView, rs []reward.Rollout, responses []string, loops *loopFields) error {
	if !view.recorded {
		return nil
	}
	g := livestate.Group{Problem: lab.ID, Version: view.Version, Scheme: scheme, Hash: groupHash(lab.ID, responses), Items: make([][3]int, len(view.Judged))}
	for j, it := range view.Judged {
		g.Items[j][0] = int(it.ID)
	}
	for i := range rs {
		if !rs[i].JudgeOK() || !loops.onPolicy(i) {
			continue
		}
		g.N++
		if rs[i].Correct {
			g.Correct++
		}
		for j := range view.Judged {
			if rs[i].Verdicts[j].Satisfied {
				g.Items[j][1]++
				if rs[i].Correct {
					g.Items[j][2]++
				}
			}
		}
	}
	if err := s.cfg.Live.Record(g); err != nil {
		return fmt.Errorf("live state: recording the group: %w", err)
	}
	return nil
}

// groupHash identifies a group's responses, so that a retried group counts
// once.
func groupHash(problem string, responses []string) uint64 {
	var d xxhash.Digest
	d.Reset()
	var b [8]byte
	for _, s := range append([]string{problem}, responses...) {
		binary.LittleEndian.PutUint64(b[:], uint64(len(s)))
		_, _ = d.Write(b[:])
		_, _ = d.WriteString(s)
	}
	return d.Sum64()
}

// writeLiveMetrics writes the live rubrics' summary to /metrics.
func (s *Server) writeLiveMetrics(w io.Writer) {
	if s.cfg.Live == nil {
		return
	}
	sum := s.cfg.Live.Summary()
	help(w, "rewardd_live_problems", "gauge", "Problems with a live rubric (--state-dir), by the scheme of their last group.")
	for _, x := range sum {
		fmt.Fprintf(w, "rewardd_live_problems{scheme=%q} %d\n", x.Scheme, x.Problems)
	}
	help(w, "rewardd_live_groups", "gauge", "Groups recorded into the live rubrics, by scheme.")
	for _, x := range sum {
		fmt.Fprintf(w, "rewardd_live_groups{scheme=%q} %d\n", x.Scheme, x.Groups)
	}
	help(w, "rewardd_live_items", "gauge", "Items of the live rubrics by state: items (paid or retired), saturated and anti_correlated among them over the window, retired, admitted (elicited and in the rubric), candidates, dropped.")
	for _, x := range sum {
		for _, c := range []struct {
			state string
			n     int
		}{{"items", x.Items}, {"saturated", x.Saturated}, {"anti_correlated", x.AntiCorrelated}, {"retired", x.Retired}, {"admitted", x.Admitted}, {"candidates", x.Candidates}, {"dropped", x.Dropped}} {
			fmt.Fprintf(w, "rewardd_live_items{scheme=%q,state=%q} %d\n", x.Scheme, c.state, c.n)
		}
	}
	help(w, "rewardd_live_split_groups_total", "counter", "Groups of problems another replica keeps, scored with the corpus's rubric and not recorded (--split-state warn).")
	fmt.Fprintf(w, "rewardd_live_split_groups_total %d\n", s.live.split.Load())
	s.writeElicitMetrics(w)
}

// rubricStats answers GET /v1/rubric_stats: with ?problem_id= a problem's
// live rubric, its items' window figures and its decisions with their
// evidence; without, the replica's settings and the summary by scheme.
func (s *Server) rubricStats(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Live == nil {
		writeError(w, http.StatusNotFound, "rewardd keeps no live statistics: start it with --state-dir")
		return
	}
	id := r.URL.Query().Get("problem_id")
	if id == "" {
		s.answer(w, map[string]any{"replica": s.cfg.Live.Replica(), "state_dir": s.cfg.Live.Dir(), "settings": s.cfg.Live.Settings(), "summary": s.cfg.Live.Summary()})
		return
	}
	st, ok := s.cfg.Live.Stats(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("problem %q has no live statistics on replica %q: no group of it was scored here", id, s.cfg.Live.Replica()))
		return
	}
	s.answer(w, st)
}
