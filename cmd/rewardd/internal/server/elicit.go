package server

import "io"

// ElicitOptions configure elicitation (--elicit): new criteria proposed from
// a group's best and worst responses, measured as candidates, admitted
// into the live rubric by their correlation with correctness.
type ElicitOptions struct {
	// AdmitGroups is how many groups a candidate is measured over; MaxPerProblem
	// caps the criteria admitted per problem; Every is how many groups of a
	// problem pass between elicitations.
	AdmitGroups, MaxPerProblem, Every int
	// MaxCost bounds what elicitation spends in all, in USD, across
	// restarts (the state log keeps the spending).
	MaxCost float64
	// Model is the extractor's model.
	Model string
}

// writeElicitMetrics writes elicitation's counters.
func (s *Server) writeElicitMetrics(w io.Writer) {}
