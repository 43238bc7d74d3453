package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
)

// Status is what `distill status` shows of a run directory.
type Status struct {
	Dir      string          `json:"dir"`
	Manifest corpus.Manifest `json:"manifest"`
	Report   *Report         `json:"report,omitempty"`
}

// ReadStatus reads a run directory without taking its lock, so it works
// while a run is going on. A run writes its report when it starts, so a
// running run is known from its first second.
func ReadStatus(dir string) (*Status, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	st := &Status{Dir: dir}
	m, err := corpus.ReadManifest(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	st.Manifest = m
	rep, ok, err := ReadReport(dir)
	if err != nil {
		return nil, err
	}
	if ok {
		st.Report = &rep
	}
	if !ok && len(m.Shards) == 0 {
		return nil, fmt.Errorf("%s holds no run (no %s or %s)", dir, corpus.ManifestName, corpus.ReportName)
	}
	// TODO(integration): a report that says "running" while nothing holds
	// LOCK is a dead run: probe the lock (corpus) and show it as stopped.
	return st, nil
}

// WriteJSON prints the status as one JSON document.
func (s *Status) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteText prints the status for a person.
func (s *Status) WriteText(w io.Writer) {
	fmt.Fprintf(w, "corpus: %d records in %d shards (spec %s, tool %s)\n", s.Manifest.Rows, len(s.Manifest.Shards), s.Manifest.SpecVersion, s.Manifest.ToolVersion)
	if s.Report == nil {
		fmt.Fprintln(w, "no report.json yet")
		return
	}
	s.Report.WriteSummary(w, s.Dir)
	if s.Report.Status == StatusRunning {
		s.Report.writeProgress(w)
		for _, e := range s.Report.Endpoints {
			fmt.Fprintf(w, "endpoint %s\n", e)
		}
	}
}

// writeProgress prints how far a running run is and when it should end.
func (r *Report) writeProgress(w io.Writer) {
	p := r.Problems
	handled := p.Done + p.Failed + p.LeftOut + p.BadLines + p.Duplicates
	fmt.Fprintf(w, "progress: %d", handled)
	if p.InputLines > 0 {
		fmt.Fprintf(w, " of %d input rows (%.1f%%)", p.InputLines, pct(handled, p.InputLines))
	} else {
		fmt.Fprint(w, " input rows (the total is still being counted)")
	}
	fmt.Fprintf(w, " handled; last update %s ago", time.Since(r.Updated).Round(time.Second))
	if r.ETASeconds != nil {
		fmt.Fprintf(w, ", ETA %s", (time.Duration(*r.ETASeconds) * time.Second).Round(time.Second))
	}
	fmt.Fprintln(w)
}
