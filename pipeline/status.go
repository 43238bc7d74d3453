package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/llm"
)

// Status is what `distill status` shows of a run directory.
type Status struct {
	Dir      string          `json:"dir"`
	Manifest corpus.Manifest `json:"manifest"`
	Report   *Report         `json:"report,omitempty"`
	// Damaged lists the listed shards that are missing or whose bytes no
	// longer match the manifest; `distill repair` recovers from them.
	Damaged []corpus.DamagedShard `json:"damaged"`
	Plan    *corpus.PlanDoc       `json:"plan,omitempty"` // RUN/plan.json, from distill plan
	// Batches sums up RUN/batches/journal.jsonl (batch mode only), read
	// live: a running run journals every change of its batches.
	Batches *llm.BatchSummary `json:"batches,omitempty"`
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
	if st.Plan, err = corpus.ReadPlan(dir); err != nil {
		return nil, err
	}
	if !ok && len(m.Shards) == 0 {
		return nil, fmt.Errorf("%s holds no run (no %s or %s)", dir, corpus.ManifestName, corpus.ReportName)
	}
	if err := st.readBatches(); err != nil {
		return nil, err
	}
	if st.Damaged, err = corpus.CheckShards(dir); err != nil {
		return nil, err
	}
	if st.Damaged == nil {
		st.Damaged = []corpus.DamagedShard{}
	}
	if ok && rep.Status == StatusRunning {
		inUse, err := corpus.InUse(dir)
		if err != nil {
			return nil, err
		}
		if !inUse {
			st.Report.Status, st.Report.StoppedBy = StatusStopped, StopDied
			st.Report.StopReason = "the run's process is gone (killed or crashed) and holds no lock; run the same command again to resume"
		}
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
	s.writeJobs(w)
	refined := s.writeRefined(w)
	s.writeDamaged(w)
	if s.Report == nil {
		if !refined {
			fmt.Fprintln(w, "no report.json yet")
		}
		return
	}
	if s.Report.EmptyReason() != "" {
		s.Report.writeRejected(w)
	}
	session := "the last session"
	if s.Report.Status == StatusRunning {
		session = "the running session"
	}
	s.Report.writeSummary(w, s.Dir, session)
	if s.Report.StoppedBy == StopDied {
		s.writeDied(w)
	}
	s.writePlan(w)
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
	handled := p.Done + p.Failed + p.LeftOut + p.BadLines + p.Duplicates + r.Partition.outside()
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

// writeJobs says when the corpus holds records of several jobs (--force),
// with each job's records and the settings that differ from the first's.
func (s *Status) writeJobs(w io.Writer) {
	if !s.Manifest.Mixed() {
		return
	}
	jobs := s.Manifest.Jobs
	fmt.Fprintf(w, "mixed: records of %d jobs (forced with --force):\n", len(jobs))
	for i, j := range jobs {
		fmt.Fprintf(w, "  job %s: %d records, %s to %s", j.Fingerprint, j.Records, j.FirstSeen.Format(time.DateTime), j.LastSeen.Format(time.DateTime))
		if i > 0 {
			if diff := settingsDiff(jobs[0].Settings, j.Settings); len(diff) > 0 {
				fmt.Fprintf(w, "; differs from the first in %s", strings.Join(diff, ", "))
			}
		}
		fmt.Fprintln(w)
	}
}

// writeRefined says, for a corpus made by distill refine, what it was
// refined from and with which settings (its manifest's current job).
func (s *Status) writeRefined(w io.Writer) bool {
	for _, j := range s.Manifest.Jobs {
		from, ok := j.Settings["refined_from"]
		if !ok || j.Fingerprint != s.Manifest.JobFingerprint {
			continue
		}
		fmt.Fprintf(w, "refined from %s (job %s) by distill refine, fingerprint %s:", from, job.ShowValue(j.Settings["source_fingerprint"]), j.Fingerprint)
		for _, k := range []string{"min_edge", "anti_alpha", "saturated", "decompose"} {
			fmt.Fprintf(w, " %s %s;", k, job.ShowValue(j.Settings[k]))
		}
		fmt.Fprintf(w, " details in %s/refine.json\n", s.Dir)
		return true
	}
	return false
}

// settingsDiff lists the settings whose values differ between two jobs.
func settingsDiff(a, b map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(b) {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, job.ShowValue(a[k]), job.ShowValue(b[k])))
		}
	}
	return out
}

// writeDamaged names the damaged shards and says how to recover.
func (s *Status) writeDamaged(w io.Writer) {
	if len(s.Damaged) == 0 {
		return
	}
	var rows int64
	for _, d := range s.Damaged {
		rows += d.Rows
	}
	fmt.Fprintf(w, "damaged: %d shard(s), %d records not usable:\n", len(s.Damaged), rows)
	for _, d := range s.Damaged {
		fmt.Fprintf(w, "  %s (%d records): %s\n", d.File, d.Rows, d.Reason)
	}
	fmt.Fprintf(w, "  recover: distill repair %s, then the same distill run again (it makes them again from the response cache)\n", s.Dir)
}

// writeDied says what is known of a run whose process died: the records
// committed in shards survive; records its last report counted as done
// beyond them were lost with the process, and the next run makes them
// again with every request they needed answered from the response cache.
func (s *Status) writeDied(w io.Writer) {
	fmt.Fprintf(w, "after the crash: %d records are committed in shards", s.Manifest.Rows)
	if lost := s.Report.Problems.Done - s.Manifest.Rows; lost > 0 {
		fmt.Fprintf(w, "; %d more were finished by its last update but not committed", lost)
	}
	fmt.Fprintln(w, "; the same command resumes, answering every request the run had answered from its response cache")
}
