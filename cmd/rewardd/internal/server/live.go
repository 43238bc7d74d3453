package server

import (
	"io"
	"net/http"

	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// viewOf is the rubric a group of lab's problem is scored with, and a
// release to call once the group is recorded.
func (s *Server) viewOf(lab *schema.Label) (rubricView, func(), error) {
	return staticView(lab), func() {}, nil
}

// recordLive adds a scored group to its problem's live statistics.
func (s *Server) recordLive(lab *schema.Label, scheme string, view rubricView, rs []reward.Rollout, responses []string, loops *loopFields) error {
	return nil
}

// liveState is the live rubric of every problem (--state-dir).
type liveState struct{}

// writeLiveMetrics writes the live rubrics' summary to /metrics.
func (s *Server) writeLiveMetrics(w io.Writer) {}

// rubricStats answers GET /v1/rubric_stats.
func (s *Server) rubricStats(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "rewardd keeps no live statistics: start it with --state-dir")
}

// What a group of a problem another replica keeps gets (Config.SplitState).
const (
	SplitStateRefuse = "refuse"
	SplitStateWarn   = "warn"
)
