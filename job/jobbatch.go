package job

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// A stage section's request mode (Endpoint.Mode).
const (
	ModeOnline = "online" // requests are sent as they come (the default)
	ModeBatch  = "batch"  // requests go through the provider's Batch API
	// ModeAuto is batch when the endpoint has a Batch API (it lists
	// /v1/batches), else online: what --batch without stages asks for.
	ModeAuto = "auto"
)

// BatchSettings configure the stages in batch mode.
type BatchSettings struct {
	// MaxRequests and MaxBytes split a batch input file (OpenAI's limits:
	// 50,000 requests, 200 MB).
	MaxRequests int   `yaml:"max_requests,omitempty"`
	MaxBytes    int64 `yaml:"max_bytes,omitempty"`
	// CompletionWindow is asked of the provider (default 24h).
	CompletionWindow string `yaml:"completion_window,omitempty"`
	// PollInterval is how often open batches are read (default 30s).
	PollInterval time.Duration `yaml:"poll_interval,omitempty"`
	// MaxRowAttempts is how many batches a request may fail in
	// transiently before its problem fails (default 3).
	MaxRowAttempts int `yaml:"max_row_attempts,omitempty"`
	// CreateSettle is how long a create whose outcome is unknown (a 502 or
	// 504, a lost reply) is given to show in the provider's list before
	// the batch is created anew (default 5m).
	CreateSettle time.Duration `yaml:"create_settle,omitempty"`
	// Repairs says where a repair turn of an unparseable batch answer goes:
	// "batch" (the default: into the next wave's batch) or "online" (sent
	// at once, at the online price).
	Repairs string `yaml:"repairs,omitempty"`
	// FilesDir, when set, receives each wave's input files instead of the
	// provider, for vLLM's run-batch or any runner of the same format; the
	// next run imports the NAME.output.jsonl files it finds there.
	FilesDir string `yaml:"files_dir,omitempty"`
}

// BatchSections are the job sections whose mode can be batch, with their
// endpoints.
func (j *Job) BatchSections() map[string]*Endpoint {
	return map[string]*Endpoint{
		StageRollout: &j.Rollout.Endpoint, StageDistill: &j.Distill.Endpoint,
		StageJudge: &j.Judge.Endpoint, StageEmpirical: &j.Empirical.Endpoint,
	}
}

// SetBatch puts the named job sections in batch mode (every one, in auto
// mode, when stages is empty): what --batch [STAGES] does. A grounded
// stage name (analyze, synthesize, enrich) names the distill section it
// uses.
func (j *Job) SetBatch(stages []string) error {
	sections := j.BatchSections()
	if len(stages) == 0 {
		for _, ep := range sections {
			ep.Mode = ModeAuto
		}
		return nil
	}
	for _, s := range stages {
		switch s {
		case StageAnalyze, StageSynthesize, StageEnrich:
			s = StageDistill
		}
		ep, ok := sections[s]
		if !ok {
			return fmt.Errorf("--batch: unknown stage %q; want some of rollout, distill, judge, empirical (comma-separated), or none for every stage whose endpoint has a batch API", s)
		}
		ep.Mode = ModeBatch
	}
	return nil
}

func (j *Job) validateBatch(v *validation) {
	for _, name := range slices.Sorted(maps.Keys(j.BatchSections())) {
		switch m := j.BatchSections()[name].Mode; m {
		case "", ModeOnline, ModeBatch, ModeAuto:
		default:
			v.bad(name+".request_mode", "want online, batch or auto, not %q", m)
		}
	}
	b := j.Batch
	if b.MaxRequests < 0 || b.MaxBytes < 0 || b.PollInterval < 0 || b.MaxRowAttempts < 0 || b.CreateSettle < 0 {
		v.bad("batch", "limits must not be negative")
	}
	if r := b.Repairs; r != "" && r != ModeBatch && r != ModeOnline {
		v.bad("batch.repairs", "want batch or online, not %q", r)
	}
	if w := b.CompletionWindow; w != "" && w != "24h" {
		v.bad("batch.completion_window", "providers accept only 24h, not %q", w)
	}
}

// UsesBatch reports whether a stage section may send batches.
func (j *Job) UsesBatch() bool {
	for _, ep := range j.BatchSections() {
		if ep.Mode == ModeBatch || ep.Mode == ModeAuto {
			return true
		}
	}
	return false
}

// BatchStageList parses --batch's value: stage names, comma-separated;
// "" or "true" is every stage.
func BatchStageList(v string) []string {
	if v == "" || v == "true" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
