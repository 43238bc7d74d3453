package workers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// ErrMergeRefused is wrapped when the run directories given to Merge are
// not the finished workers of one partitioned job, or the output directory
// holds another corpus.
var ErrMergeRefused = errors.New("refusing to merge")

// MergeOptions configure Merge.
type MergeOptions struct {
	// ShardRows is the records per shard of the merged corpus; 0 takes the
	// workers' output.shard_rows.
	ShardRows   int
	ToolVersion string       // "dev" when empty
	Logger      *slog.Logger // nil: no log
}

// mergePart is one worker's run directory, as read before the merge.
type mergePart struct {
	dir    string
	job    job.Job
	part   job.Partition
	man    corpus.Manifest
	report *pipeline.Report // nil when it has none
	inUse  bool
}

// Merge writes the records and failures of the run directories parts, the
// finished workers of one partitioned job, into the run directory out as
// one corpus: the job of a whole-input run (its fingerprint, job.yaml and
// records stamped with it, so it is what one machine would have made),
// shards re-cut to opt.ShardRows, one manifest, the parts' failures and a
// report that adds up theirs. It refuses, naming every reason, unless the
// parts have one job apart from the partition, are finished, hold each
// partition 0..K-1 once and read the same input (and, when out holds an
// earlier merge, the input out records). Records go through corpus.Run's commit protocol,
// so a merge killed at any instant and run again finishes the same corpus:
// the records already committed are skipped. report.json, written last,
// says "finished" once the merge is whole.
func Merge(ctx context.Context, parts []string, out string, opt MergeOptions) (*pipeline.Report, error) {
	if opt.ToolVersion == "" {
		opt.ToolVersion = "dev"
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	ps, err := readMergeParts(parts, out)
	if err != nil {
		return nil, err
	}
	job, err := mergedJob(ps, out, opt.ShardRows)
	if err != nil {
		return nil, err
	}
	return writeMerge(ctx, ps, job, opt)
}

// readMergeParts reads every part and checks that they can be merged.
func readMergeParts(dirs []string, out string) ([]*mergePart, error) {
	if len(dirs) == 0 {
		return nil, &job.UsageError{Problems: []string{"no run directory to merge"}}
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	var ps []*mergePart
	var problems []string
	for _, dir := range dirs {
		if why := outAroundPart(outAbs, dir); why != "" {
			return nil, &job.UsageError{Problems: []string{fmt.Sprintf("--out %s %s; give a new directory beside them", out, why)}}
		}
		p, err := readMergePart(dir)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		ps = append(ps, p)
	}
	if len(problems) == 0 {
		problems = append(problems, checkMergeParts(ps)...)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w:\n  %s", ErrMergeRefused, strings.Join(problems, "\n  "))
	}
	slices.SortFunc(ps, func(a, b *mergePart) int { return a.part.Index - b.part.Index })
	return ps, nil
}

// outAroundPart says why the merge's output directory (absolute) cannot
// be where it is for the part dir: it is the part, holds it (the workers'
// parent directory would become a run directory around them) or lies
// inside it; "" when they are apart.
func outAroundPart(outAbs, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	within := func(parent, child string) bool {
		rel, err := filepath.Rel(parent, child)
		return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	switch {
	case abs == outAbs:
		return "is one of the run directories to merge"
	case within(outAbs, abs):
		return "holds the run directory " + dir + " to merge"
	case within(abs, outAbs):
		return "is inside the run directory " + dir + " to merge"
	}
	return ""
}

// readMergePart reads a worker's manifest, job and report.
func readMergePart(dir string) (*mergePart, error) {
	man, err := corpus.ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s holds no corpus (no %s)", dir, corpus.ManifestName)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	p := &mergePart{dir: dir, man: man}
	b, err := fsys.ReadFile(fsys.OS, corpus.Layout{Dir: dir}.Job())
	p.job = job.DefaultJob()
	if err == nil {
		err = yaml.Unmarshal(b, &p.job)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading its job: %w", dir, err)
	}
	if p.job.Partition == "" {
		return nil, fmt.Errorf("%s is not a partitioned worker (its job has no partition)", dir)
	}
	if p.part, err = job.ParsePartition(p.job.Partition); err != nil {
		return nil, fmt.Errorf("%s: partition %w", dir, err)
	}
	if man.Mixed() {
		return nil, fmt.Errorf("%s holds records of several jobs (run with --force); merge only the workers of one job", dir)
	}
	if fp := p.job.Fingerprint(); fp != man.JobFingerprint {
		return nil, fmt.Errorf("%s: its job.yaml (job %s) is not the job of its manifest (%s): the directory was made by another version of distill, or its job changed with --force", dir, fp, man.JobFingerprint)
	}
	rep, ok, err := pipeline.ReadReport(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if ok {
		p.report = &rep
	}
	if p.inUse, err = corpus.InUse(dir); err != nil {
		return nil, err
	}
	return p, nil
}

// checkMergeParts lists why the parts cannot be merged: another job,
// another number of partitions, a partition twice or missing, a worker not
// finished.
func checkMergeParts(ps []*mergePart) []string {
	var problems []string
	base := ps[0].job
	base.Partition = ""
	k := ps[0].part.Count
	held := map[int]string{}
	for _, p := range ps {
		j := p.job
		j.Partition = ""
		if j.Fingerprint() != base.Fingerprint() {
			problems = append(problems, fmt.Sprintf("%s has another job than %s: %s", p.dir, ps[0].dir, strings.Join(job.ChangedSettings(&base, &j), "; ")))
		}
		if p.part.Count != k {
			problems = append(problems, fmt.Sprintf("%s is partition %s, %s is %s: the workers split the input differently", p.dir, p.part, ps[0].dir, ps[0].part))
			continue
		}
		if other, ok := held[p.part.Index]; ok {
			problems = append(problems, fmt.Sprintf("partition %s is in both %s and %s", p.part, other, p.dir))
		}
		held[p.part.Index] = p.dir
		if why := unfinished(p); why != "" {
			problems = append(problems, fmt.Sprintf("%s (partition %s) %s", p.dir, p.part, why))
		}
	}
	problems = append(problems, inputProblems(ps)...)
	var missing []string
	for i := range k {
		if _, ok := held[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, k))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("missing partitions: %s (run their workers, then merge every part)", strings.Join(missing, ", ")))
	}
	return problems
}

// inputProblems lists the workers that read other input than the first
// worker whose manifest records its input (workers made before inputs were
// recorded cannot be compared), naming the files that differ.
func inputProblems(ps []*mergePart) []string {
	ws := make([]workerInput, len(ps))
	for i, p := range ps {
		ws[i] = workerInput{p.dir, p.man.Inputs}
	}
	return inputsDiffer(ws)
}

// workerInput is a worker's directory and the input it recorded.
type workerInput struct {
	dir    string
	inputs []corpus.InputFile
}

// maxDiffShown bounds the input files a line names as differing between
// two workers; the rest are counted.
const maxDiffShown = 3

// inputsDiffer is inputProblems over any workers: merge's and status's.
func inputsDiffer(ws []workerInput) []string {
	ref := -1
	for i, w := range ws {
		if len(w.inputs) > 0 {
			ref = i
			break
		}
	}
	if ref < 0 {
		return nil
	}
	var problems []string
	for i, w := range ws {
		if i == ref || len(w.inputs) == 0 {
			continue
		}
		if diff := inputDiff(ws[ref].inputs, w.inputs); len(diff) > 0 {
			more := ""
			if len(diff) > maxDiffShown {
				more = fmt.Sprintf("; and %d more files differ", len(diff)-maxDiffShown)
				diff = diff[:maxDiffShown]
			}
			problems = append(problems, fmt.Sprintf("%s read other input than %s: %s%s", w.dir, ws[ref].dir, strings.Join(diff, "; "), more))
		}
	}
	return problems
}

// mergeInputs is the first part whose manifest records its input; nil
// when none does.
func mergeInputs(ps []*mergePart) *mergePart {
	for _, p := range ps {
		if len(p.man.Inputs) > 0 {
			return p
		}
	}
	return nil
}

// inputDiff lists the input files of b whose content differs from a's,
// matched by position (paths may differ between machines).
func inputDiff(a, b []corpus.InputFile) []string {
	var out []string
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			out = append(out, "it also read "+source.DescribeInput(b[i]))
		case i >= len(b):
			out = append(out, "it did not read "+source.DescribeInput(a[i]))
		case a[i].XXHash64 != b[i].XXHash64 || a[i].Bytes != b[i].Bytes:
			out = append(out, fmt.Sprintf("%s, not %s", source.DescribeInput(b[i]), source.DescribeInput(a[i])))
		}
	}
	return out
}

// unfinished says why a worker has not finished; "" when it has.
func unfinished(p *mergePart) string {
	r := p.report
	switch {
	case p.inUse:
		return "is still running"
	case r == nil:
		return "has no report.json: it has not run to its end"
	case r.Status == pipeline.StatusFinished && r.Problems.Pending == 0:
		return ""
	case r.Status == pipeline.StatusRunning:
		return "has not finished (its process is gone): run its worker again to resume"
	case r.Status == pipeline.StatusFailed:
		return "failed: " + r.StopReason + "; fix the cause and run its worker again"
	}
	return fmt.Sprintf("has not finished (%s: %s): run its worker again to resume", r.Status, r.StopReason)
}

// mergedJob is the job of the merged corpus: the workers' job without a
// partition, writing into out.
func mergedJob(ps []*mergePart, out string, shardRows int) (job.Job, error) {
	j := ps[0].job
	j.Partition, j.Out, j.Cache = "", out, ""
	if shardRows > 0 {
		j.Output.ShardRows = shardRows
	}
	if j.Output.ShardRows < 1 {
		return j, &job.UsageError{Problems: []string{fmt.Sprintf("--shard-rows %d: must be at least 1", j.Output.ShardRows)}}
	}
	m, err := corpus.ReadManifest(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return j, nil
	case err != nil:
		return j, fmt.Errorf("%w: --out %s: %w", ErrMergeRefused, out, err)
	case m.JobFingerprint != j.Fingerprint() && m.Rows > 0:
		return j, fmt.Errorf("%w: --out %s holds %d records of another job (%s, the parts' is %s); give a new directory", ErrMergeRefused, out, m.Rows, m.JobFingerprint, j.Fingerprint())
	}
	if ref := mergeInputs(ps); ref != nil && len(m.Inputs) > 0 {
		if diff := inputDiff(m.Inputs, ref.man.Inputs); len(diff) > 0 {
			return j, fmt.Errorf("%w: --out %s holds a merge of workers that read other input than %s: %s; give a new directory",
				ErrMergeRefused, out, ref.dir, strings.Join(diff, "; "))
		}
	}
	return j, nil
}

// writeMerge copies the parts into the merged run directory.
func writeMerge(ctx context.Context, ps []*mergePart, j job.Job, opt MergeOptions) (*pipeline.Report, error) {
	started := time.Now()
	run, err := corpus.Open(j.Out, corpus.Options{ShardRows: j.Output.ShardRows, ToolVersion: opt.ToolVersion, Logger: opt.Logger})
	if err != nil {
		return nil, err
	}
	fp := j.Fingerprint()
	run.SetJob(fp, j.Settings())
	if ref := mergeInputs(ps); ref != nil {
		run.SetInputs(ref.man.Inputs)
	}
	rep := sumReports(ps, fp, opt.ToolVersion)
	rep.Status = pipeline.StatusRunning
	err = errors.Join(writeMergeJob(&j), pipeline.WriteReport(fsys.OS, j.Out, &rep))
	for i, p := range ps {
		if err != nil {
			break
		}
		if err = mergePartInto(ctx, run, p, fp, &rep.Problems); err == nil {
			opt.Logger.Info("merged a worker", "dir", p.dir, "partition", p.part.String(), "records", p.man.Rows, "parts_done", i+1, "of", len(ps))
		}
	}
	if err == nil {
		err = run.Commit()
	}
	if err == nil {
		_, err = run.Compact()
	}
	if err == nil {
		err = mergeCaches(ps, j.Out, opt.Logger)
	}
	rep.CorpusRows, rep.Shards = run.Manifest().Rows, len(run.Manifest().Shards)
	if cerr := run.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("merging into %s: %w", j.Out, err)
	}
	rep.Problems.AlreadyDone = rep.Problems.Done - rep.Problems.DoneThisSession
	rep.Status, rep.Updated = pipeline.StatusFinished, time.Now().UTC()
	rep.ElapsedSeconds = time.Since(started).Seconds()
	if err := pipeline.WriteReport(fsys.OS, j.Out, &rep); err != nil {
		return nil, fmt.Errorf("writing report: %w", err)
	}
	return &rep, nil
}

// mergeCaches merges the workers' response caches into the merged
// directory's: the answers they paid for, so a variant of the merged job
// (a larger n, a new judge template) pays only for what is new, and the
// spend behind them, which a later run in the merged directory restores
// its tokens and cost from (the cache is the record of what was paid). A
// worker without a cache is skipped with a warning.
//
// A merged directory that has its cache already (a merge run again, or a
// run in it since) keeps it: the workers' answers are in it, and answers
// a later run added would be lost to a rebuild.
func mergeCaches(ps []*mergePart, out string, log *slog.Logger) error {
	if _, err := fsys.OS.Stat(corpus.Layout{Dir: out}.Cache()); err == nil {
		log.Info("the merged directory has its response cache already; kept it", "cache", corpus.Layout{Dir: out}.Cache())
		return nil
	}
	var srcs []string
	for _, p := range ps {
		path := corpus.Layout{Dir: p.dir}.Cache()
		if _, err := fsys.OS.Stat(path); err != nil {
			log.Warn("a worker has no response cache: its answers and spend are not in the merged cache", "dir", p.dir, "err", err)
			continue
		}
		srcs = append(srcs, path)
	}
	res, err := cache.Merge(corpus.Layout{Dir: out}.Cache(), srcs, cache.WithLogger(log))
	if err != nil {
		return fmt.Errorf("merging the workers' response caches: %w", err)
	}
	log.Info("merged the workers' response caches", "caches", res.Sources, "responses", res.Entries, "repeats", res.Repeats, "damaged", res.Damaged)
	return nil
}

func writeMergeJob(j *job.Job) error {
	b, err := j.RunDirYAML()
	if err != nil {
		return fmt.Errorf("encoding job: %w", err)
	}
	return fsys.WriteFileAtomic(fsys.OS, corpus.Layout{Dir: j.Out}.Job(), b, 0o644)
}

// mergePartInto appends the records of p that run does not hold yet,
// stamped with the merged job's fingerprint, then its failures, counting
// them as this session's in pc. A record of another partition means the
// parts overlap: the merge stops.
func mergePartInto(ctx context.Context, run *corpus.Run, p *mergePart, fp string, pc *pipeline.ProblemCounts) error {
	partFP := p.man.JobFingerprint
	err := corpus.ReadAll(p.dir, func(r *schema.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if key := recordPartitionKey(r); !p.part.Holds(key) {
			return fmt.Errorf("%w: %s (partition %s) holds %s, which is partition %d/%d's", ErrMergeRefused, p.dir, p.part, r.ID, job.PartitionOf(key, p.part.Count), p.part.Count)
		}
		if run.Done(r.ID) {
			return nil // merged by an earlier, interrupted merge
		}
		if r.Provenance.JobFingerprint == partFP || r.Provenance.JobFingerprint == "" {
			r.Provenance.JobFingerprint = fp
		}
		pc.DoneThisSession++
		return run.Append(r)
	})
	if err != nil {
		return fmt.Errorf("records of %s: %w", p.dir, err)
	}
	fails, err := corpus.ReadFailures(p.dir)
	if err != nil {
		return fmt.Errorf("failures of %s: %w", p.dir, err)
	}
	fails = slices.DeleteFunc(fails, func(f corpus.Failure) bool {
		_, again := run.Failed(f.ID)
		return run.Done(f.ID) || again
	})
	for _, f := range fails {
		if job.LeftOutStage(f.Stage) {
			pc.LeftOutThisSession++
		} else {
			pc.FailedThisSession++
		}
	}
	return run.RecordFailures(fails)
}

// recordPartitionKey is the partition key of the unit a record was made
// from, as the feeder takes it: a passage's content hash, else the id.
func recordPartitionKey(r *schema.Record) string {
	if r.Grounded != nil && r.Grounded.DocHash != "" {
		return r.Grounded.DocHash
	}
	return r.ID
}
