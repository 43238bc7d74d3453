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
// while a run is going on.
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
		fmt.Fprintf(w, "last checkpoint %s ago", time.Since(s.Report.Updated).Round(time.Second))
		if s.Report.ETASeconds != nil {
			fmt.Fprintf(w, ", ETA %s", (time.Duration(*s.Report.ETASeconds) * time.Second).Round(time.Second))
		}
		fmt.Fprintln(w)
	}
}

// WriteSummary prints the report's figures for a person.
func (r *Report) WriteSummary(w io.Writer, dir string) {
	p := r.Problems
	fmt.Fprintf(w, "run directory: %s (%s", dir, r.Status)
	if r.StopReason != "" {
		fmt.Fprintf(w, ": %s", r.StopReason)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "problems: %d unique of %d input rows (%d duplicates, %d bad lines)\n", p.Unique, p.InputRows, p.Duplicates, p.BadLines)
	fmt.Fprintf(w, "  done %d (%d this session), failed %d, left out by selection %d, pending %d\n", p.Done, p.DoneThisSession, p.Failed, p.LeftOut, p.Pending)
	if len(r.FailuresByStage) > 0 {
		fmt.Fprint(w, "  failures by stage:")
		for _, k := range sortedKeys(r.FailuresByStage) {
			fmt.Fprintf(w, " %s=%d", k, r.FailuresByStage[k])
		}
		fmt.Fprintln(w)
	}
	if t := r.Rollouts.Total; t > 0 {
		fmt.Fprintf(w, "rollouts: %d, %.1f%% correct, %.1f%% well formatted, %d cut off\n", t,
			pct(r.Rollouts.Correct, t), pct(r.Rollouts.FormatOK, t), r.Rollouts.Truncated)
	}
	if len(r.Validity) > 0 {
		fmt.Fprint(w, "rubric items valid/judged:")
		for _, k := range sortedKeys(r.Validity) {
			v := r.Validity[k]
			fmt.Fprintf(w, " %s %d/%d (%.1f%%)", k, v.Valid, v.Valid+v.Invalid, 100*v.Rate)
		}
		fmt.Fprintln(w)
	}
	t := r.LLM.Total
	fmt.Fprintf(w, "requests: %d sent, %d from cache, %d retries; tokens %d prompt + %d completion; cost $%.4f\n",
		t.Requests, t.CacheHits, t.Retries, t.PromptTokens, t.CompletionTokens, t.CostUSD)
	fmt.Fprintf(w, "shards: %d; this session took %s\n", r.Shards, (time.Duration(r.ElapsedSeconds * float64(time.Second))).Round(time.Millisecond))
}

func pct(n, d int64) float64 { return 100 * float64(n) / float64(d) }
