package workers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkMerge64Parts times `distill merge` of 64 finished workers'
// run directories, run as the built command, and reports its peak RSS.
// Records are full size (8 rollouts of ~2 KB, 8 judged items). Records per
// part: RUBRICFORGE_MERGE_PER_PART, default 1024; the figure is
// 16384 (1,048,576 records, ~6 GB of shards written twice):
//
//	RUBRICFORGE_MERGE_PER_PART=16384 go test -run '^$' -bench Merge64Parts -benchtime 1x -timeout 2h ./pipeline/
func BenchmarkMerge64Parts(b *testing.B) {
	per := 1024
	if s := os.Getenv("RUBRICFORGE_MERGE_PER_PART"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("RUBRICFORGE_MERGE_PER_PART=%q", s)
		}
		per = v
	}
	const k = 64
	dir := b.TempDir()
	bin := testbin.Command(b, "cmd/distill")
	made := time.Now()
	parts := makeMergeParts(b, dir, k, per)
	b.Logf("made %d parts of %d records in %s", k, per, time.Since(made).Round(time.Second))
	var peakKB int64
	var cpu time.Duration
	var bytes int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		out := filepath.Join(dir, fmt.Sprintf("all-%d", i))
		cmd := exec.Command(bin, append(append([]string{"merge"}, parts...), "--out", out, "--shard-rows", "1000")...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("merge: %v\n%s", err, msg)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		peakKB = max(peakKB, ru.Maxrss)
		cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		b.StopTimer()
		m, err := corpus.ReadManifest(out)
		if err != nil || m.Rows != int64(k*per) {
			b.Fatalf("merged %d rows, want %d: %v", m.Rows, k*per, err)
		}
		bytes = 0
		for _, s := range m.Shards {
			bytes += s.Bytes
		}
		os.RemoveAll(out)
		b.StartTimer()
	}
	b.ReportMetric(float64(k*per)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(bytes)/(1<<20), "corpus-MiB")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op") // user + system time of the command: what the merge costs on an idle machine's core
}

// makeMergeParts writes k finished workers' run directories of per
// records each, as distill run --partition I/k leaves them: each record in
// its partition, job.yaml, the manifest's job, a finished report.
func makeMergeParts(b *testing.B, dir string, k, per int) []string {
	ps, err := prompts.Load("")
	if err != nil {
		b.Fatal(err)
	}
	gen := newRecordGen()
	byPart := make([][]string, k)
	full := 0
	for i := 0; full < k; i++ {
		id := job.ProblemID(fmt.Sprintf("Problem %d: find the value.", i), fmt.Sprint(i))
		p := job.PartitionOf(id, k)
		if len(byPart[p]) < per {
			byPart[p] = append(byPart[p], id)
			if len(byPart[p]) == per {
				full++
			}
		}
	}
	var dirs []string
	for p := range k {
		job := runtest.TestJob("/bench/problems.jsonl", filepath.Join(dir, fmt.Sprintf("part-%d", p)), "http://127.0.0.1:1/v1")
		job.Partition = fmt.Sprintf("%d/%d", p, k)
		job.Output.ShardRows = 1000
		job.Normalize()
		job.StampVersions(ps, source.CutterVersion)
		fp := job.Fingerprint()
		run, err := corpus.Open(job.Out, corpus.Options{ShardRows: 1000, ToolVersion: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		run.SetJob(fp, job.Settings())
		for _, id := range byPart[p] {
			rec := gen.record(id, fp)
			if err := run.Append(&rec); err != nil {
				b.Fatal(err)
			}
		}
		if err := run.Close(); err != nil {
			b.Fatal(err)
		}
		y, err := job.RunDirYAML()
		if err != nil {
			b.Fatal(err)
		}
		os.WriteFile(corpus.Layout{Dir: job.Out}.Job(), y, 0o644)
		n := int64(per)
		rep := pipeline.Report{Status: pipeline.StatusFinished, JobFingerprint: fp, SpecVersion: schema.SpecVersion, CorpusRows: n,
			Problems: pipeline.ProblemCounts{InputRows: int64(k * per), Unique: n, Done: n}, Partition: &pipeline.PartitionShare{Partition: job.Partition, RowsSeen: int64(k * per), RowsInPartition: n}}
		if err := pipeline.WriteReport(fsys.OS, job.Out, &rep); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, job.Out)
	}
	return dirs
}

// recordGen makes full-size records from a pool of texts.
type recordGen struct {
	rng   *rand.Rand
	texts []string
}

func newRecordGen() *recordGen {
	g := &recordGen{rng: rand.New(rand.NewPCG(7, 7))}
	words := strings.Fields("let x be the value so that the sum of both sides equals twelve then we divide by three and check each case of the given condition")
	for range 4096 {
		var s strings.Builder
		for s.Len() < 2048 {
			s.WriteString(words[g.rng.IntN(len(words))])
			s.WriteByte(' ')
		}
		g.texts = append(g.texts, s.String())
	}
	return g
}

func (g *recordGen) text(n int) string {
	t := g.texts[g.rng.IntN(len(g.texts))]
	return t[:min(n, len(t))]
}

func (g *recordGen) record(id, fp string) schema.Record {
	ptr := func(s string) *string { return &s }
	rec := schema.Record{
		ID: id, Source: "math", Split: "train", Problem: g.text(600), Answer: g.text(12), Style: schema.StyleSRaR, NCorrect: 4, PassRate: 0.5,
		Provenance: schema.Provenance{RolloutModel: "simulated", DistillModel: "simulated", JudgeModel: ptr("simulated"),
			RolloutTemplate: "0123456789abcdef", DistillTemplate: "fedcba9876543210", JudgeTemplate: ptr("00ff00ff00ff00ff"),
			JobFingerprint: fp, SpecVersion: schema.SpecVersion, ToolVersion: "bench", CreatedAt: time.UnixMilli(1_780_000_000_000).UTC()},
	}
	for j := range 8 {
		valid := true
		rec.Rollouts = append(rec.Rollouts, schema.Rollout{Index: int32(j), Text: g.text(2048), ExtractedAnswer: g.text(8),
			Correct: j%2 == 0, FormatOK: true, FinishReason: "stop"})
		it := schema.Item{ID: int32(j + 1), Type: schema.ItemTypes[j%4], Text: g.text(150), Weight: 1, Valid: &valid, ValidReason: ptr(g.text(80))}
		it.Polarity = schema.PolarityOf(it.Type)
		rec.Rubric = append(rec.Rubric, it)
	}
	return rec
}
