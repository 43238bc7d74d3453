package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/job"
)

// batchStages are the stage names --batch takes: the job sections that can
// run in batch mode, and the grounded stages, which use the distill section.
var batchStages = []string{
	job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical,
	job.StageAnalyze, job.StageSynthesize, job.StageEnrich,
}

// batchValue is --batch [STAGES]: a boolean flag (--batch alone, or
// --batch=false) that also takes a list of stages (--batch=distill,judge;
// batchArgs turns the form with a space into this one).
type batchValue struct {
	set    bool
	off    bool     // --batch=false: every section online
	stages []string // nil: every stage whose endpoint has a Batch API
}

func (b *batchValue) IsBoolFlag() bool { return true }

func (b *batchValue) String() string {
	if b == nil || !b.set {
		return ""
	}
	if b.off {
		return "false"
	}
	return strings.Join(b.stages, ",")
}

func (b *batchValue) Set(v string) error {
	b.set, b.off, b.stages = true, false, nil
	switch v {
	case "true", "":
		return nil
	case "false":
		b.off = true
		return nil
	}
	for _, s := range job.BatchStageList(v) {
		if !slices.Contains(batchStages, s) {
			return fmt.Errorf("unknown stage %q; want some of %s (comma-separated), or nothing for every stage whose endpoint has a Batch API", s, strings.Join(batchStages, ", "))
		}
		b.stages = append(b.stages, s)
	}
	if len(b.stages) == 0 {
		return fmt.Errorf("no stage in %q", v)
	}
	return nil
}

// stageListArg is what batchArgs takes as --batch's value when it follows
// after a space: words separated by commas. A word that is not a stage is
// then reported by name; a path or a flag never matches.
var stageListArg = regexp.MustCompile(`^[A-Za-z_]+(,[A-Za-z_]+)*$`)

// batchArgs lets --batch take its stages after a space, as in
// "--batch distill,judge": Go's flag package gives a boolean flag no
// separate value, so the pair becomes "--batch=distill,judge". The next
// argument is taken only when it is a list of words (distill run and plan
// take no other arguments); "--batch --config job.yaml" stays bare.
func batchArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--batch" || a == "-batch") && i+1 < len(args) && stageListArg.MatchString(args[i+1]) &&
			args[i+1] != "true" && args[i+1] != "false" {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// batchFlags binds --batch, --batch-files, --batch-poll,
// --batch-max-requests and --batch-max-bytes.
func (f *flagSet) batchFlags() {
	var stages batchValue
	f.fs.Var(&stages, "batch", "send the requests of stages through their provider's Batch API, at its batch price (half, by default), "+
		"answered within 24 h: --batch alone for every stage whose endpoint has one (it lists /v1/batches), or --batch STAGES for those stages, comma-separated, "+
		"of rollout, distill, judge, empirical (analyze, synthesize and enrich are the grounded style's distill section); the job file's request_mode: per section does the same; "+
		"e.g. --batch distill,judge")
	files := f.fs.String("batch-files", "", "write each wave's batch input files to this directory instead of sending them, for vLLM's run-batch or any runner of the OpenAI batch format; "+
		"the run stops (exit 4), and the next distill run imports each NAME.output.jsonl it finds there; puts the stages of --batch in batch mode, or, without --batch, "+
		"those the job file puts in batch mode, else every stage; e.g. --batch-files runs/math/offline")
	poll := f.fs.Duration("batch-poll", 0, "how often open batches are read (default 30s); e.g. --batch-poll 5m")
	maxReq := f.fs.Int("batch-max-requests", 0, "most requests in one batch input file (default 50000, OpenAI's limit); e.g. --batch-max-requests 10000")
	maxBytes := f.fs.Int64("batch-max-bytes", 0, "largest batch input file in bytes (default 200000000, 200 MB, OpenAI's limit); e.g. --batch-max-bytes 100000000")
	f.apply = append(f.apply, func(j *job.Job) {
		switch {
		case stages.off:
			for _, ep := range []*job.Endpoint{&j.Rollout.Endpoint, &j.Distill.Endpoint, &j.Judge.Endpoint, &j.Empirical.Endpoint} {
				ep.Mode = job.ModeOnline
			}
		case stages.set:
			_ = j.SetBatch(stages.stages) // Set checked every name
		case *files != "" && !inBatchMode(j):
			_ = j.SetBatch(nil)
		}
		if isSet(f.fs, "batch-files") {
			j.Batch.FilesDir = *files
		}
		if isSet(f.fs, "batch-poll") {
			j.Batch.PollInterval = *poll
		}
		if isSet(f.fs, "batch-max-requests") {
			j.Batch.MaxRequests = *maxReq
		}
		if isSet(f.fs, "batch-max-bytes") {
			j.Batch.MaxBytes = *maxBytes
		}
	})
}

// inBatchMode reports whether the job puts a section in batch mode.
func inBatchMode(j *job.Job) bool {
	for _, m := range []string{j.Rollout.Endpoint.Mode, j.Distill.Endpoint.Mode, j.Judge.Endpoint.Mode, j.Empirical.Endpoint.Mode} {
		if m == job.ModeBatch || m == job.ModeAuto {
			return true
		}
	}
	return false
}
