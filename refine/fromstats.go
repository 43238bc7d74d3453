package refine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/schema"
)

// A refinement by a training run's live statistics (distill refine
// --from-stats) folds what rewardd's live rubric learnt while the policy
// trained into a new corpus version: the items the run retired (saturated:
// the policy met them everywhere) are dropped, except ANSWER items and the
// items the style's rules need; the elicited criteria the run admitted
// (valid to the judge, correlated with correctness over the groups) are
// added, as the style's types have them (PROCESS as SUGGEST in srar; a
// PITFALL is not added to a factual_process rubric); the items are
// renumbered 1..n. A record's stored verdicts are kept, renumbered, when it
// only lost items, and cleared when it gained some (they do not cover the
// new criteria). Records the run scored no group of, or scored with
// another rubric (another corpus version), are copied unchanged; so are
// the problems two replicas kept, with SkipSplit (without it the state
// directory is refused). The corpus is written as Run writes one: into a
// hidden sibling directory renamed at the end, its manifest naming the
// refinement's fingerprint and settings, every record carrying it;
// from-stats.json sums it up and from-stats-records.jsonl says what
// changed in each record, with the run's evidence.

// StatsConfig is a refinement by a training run's live statistics
// (distill refine --from-stats): from Src, with the state directory
// StatsDir of the run's rewardd, into Out.
type StatsConfig struct {
	Src, Out, StatsDir string
	// SkipSplit skips, unchanged, the problems two replicas kept (their
	// statistics are split); without it such a state directory is refused.
	SkipSplit   bool
	ShardRows   int
	ToolVersion string
	Logger      *slog.Logger
	// FS is the file system the refined corpus is written to; default
	// fsys.OS. The source and the state directory are read from the real
	// one.
	FS fsys.FS
}

// fs is the file system of the refined corpus.
func (c *StatsConfig) fs() fsys.FS {
	if c.FS == nil {
		return fsys.OS
	}
	return c.FS
}

// FromStats folds a training run's live rubric into a new corpus (see
// above) and returns what it did.
func FromStats(ctx context.Context, cfg StatsConfig) (*corpus.FromStats, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d, err := livestate.Read(fsys.OS, cfg.StatsDir)
	if err != nil {
		return nil, fmt.Errorf("--from-stats: %w: %w", err, ErrUsage)
	}
	if len(d.Split) > 0 && !cfg.SkipSplit {
		var ids []string
		for id := range d.Split {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return nil, fmt.Errorf("--from-stats %s: %d problems were kept by two replicas (their groups went to both, so each holds part of their statistics): %s; send each problem's groups to one replica, or give --skip-split to leave those records as they are: %w",
			cfg.StatsDir, len(ids), strings.Join(ids[:min(len(ids), 5)], ", "), ErrUsage)
	}
	in, err := openSource(cfg.Src)
	if err != nil {
		return nil, err
	}
	src, _ := filepath.Abs(cfg.Src)
	stats, _ := filepath.Abs(cfg.StatsDir)
	settings := map[string]string{
		"command": "distill refine --from-stats", "refine_version": Version, "refined_from": src, "from_stats": stats,
		"replicas": strings.Join(d.Replicas, ","), "source_kind": in.Kind + "/" + in.Format,
		"source_fingerprint": strings.Join(sourceFingerprints(in), ","), "skip_split": strconv.FormatBool(cfg.SkipSplit),
		"rule": "retired items dropped (not ANSWER, not what the style needs); admitted criteria added; ids renumbered",
	}
	fp := fingerprint(in, settings)
	sum := &corpus.FromStats{Source: src, StateDir: stats, Replicas: d.Replicas, Fingerprint: fp}
	if _, err := checkOut(cfg.fs(), cfg.Out, cfg.Src, fp); err != nil {
		return nil, err
	}
	if cfg.ShardRows <= 0 {
		cfg.ShardRows = shardRowsOf(in)
	}
	w, err := newStatsWriter(cfg, fp, settings)
	if err != nil {
		return nil, err
	}
	defer w.abandon()
	var bad []audit.Problem
	err = audit.Records(ctx, in, func(rec *schema.Record) error {
		sum.Records++
		out, change := foldStats(rec, d, sum)
		if change == nil {
			return w.add(out, nil)
		}
		return w.add(out, change)
	}, func(p audit.Problem) { bad = append(bad, p) })
	switch {
	case err != nil:
		return nil, fmt.Errorf("refining %s: %w", cfg.Src, err)
	case len(bad) > 0:
		return nil, fmt.Errorf("refining %s: %s line %d: %s (%d rows did not read; the source must read whole)", cfg.Src, bad[0].File, bad[0].Line, bad[0].Error, len(bad))
	}
	if err := w.commit(sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// foldStats is rec with the live statistics of its problem folded in, and
// what changed (nil when nothing did).
func foldStats(rec *schema.Record, d *livestate.Dir, sum *corpus.FromStats) (*schema.Record, *corpus.FromStatsRecord) {
	if _, split := d.Split[rec.ID]; split {
		sum.Split++
		return rec, nil
	}
	st, ok := d.Problems[rec.ID]
	switch {
	case !ok || rec.Grounded != nil:
		sum.NotInStats++
		return rec, nil
	case st.RubricHash != livestate.RubricHash(schema.LabelOf(rec).Rubric):
		sum.RubricDiffers++
		return rec, nil
	}
	sum.Matched++
	sum.Groups += st.Groups
	change := &corpus.FromStatsRecord{ID: rec.ID, RubricVersion: st.Version, Groups: st.Groups, Dropped: []corpus.FromStatsItem{}, Kept: []corpus.FromStatsItem{},
		Added: []corpus.FromStatsItem{}, NewIDs: map[string]int32{}}
	evidence := lastEvidence(st.Events)
	retired := map[int32]bool{}
	for _, it := range st.Items {
		if it.Origin == livestate.OriginCorpus && it.State == livestate.StateRetired {
			retired[it.ID] = true
		}
	}
	keep := make([]bool, len(rec.Rubric))
	for j, it := range rec.Rubric {
		keep[j] = !retired[it.ID] || it.Type == schema.TypeAnswer
	}
	restoreRetired(rec, keep, retired)
	out := *rec
	out.Rubric = nil
	newID := map[int32]int32{}
	for j, it := range rec.Rubric {
		fi := corpus.FromStatsItem{ID: it.ID, Type: it.Type, Text: it.Text, Weight: it.Weight, Evidence: evidence[it.ID]}
		if !keep[j] {
			change.Dropped = append(change.Dropped, fi)
			sum.Retired++
			continue
		}
		it.ID = int32(len(out.Rubric) + 1)
		newID[fi.ID] = it.ID
		change.NewIDs[strconv.Itoa(int(fi.ID))] = it.ID
		if retired[fi.ID] {
			fi.NewID, fi.Reason = it.ID, keptReason(it)
			change.Kept = append(change.Kept, fi)
			sum.RetiredKept++
		}
		out.Rubric = append(out.Rubric, it)
	}
	for _, it := range st.Items {
		if it.Origin != livestate.OriginElicited || it.State != livestate.StatePaid {
			continue
		}
		typ, ok := styleType(rec.Style, it.Type)
		fi := corpus.FromStatsItem{ID: it.ID, Type: typ, Text: it.Text, Weight: it.Weight, Evidence: evidence[it.ID]}
		if !ok {
			fi.Type, fi.Reason = it.Type, "the "+rec.Style+" style has no such item type"
			change.Kept = append(change.Kept, fi) // listed, not added
			sum.AdmittedSkipped++
			continue
		}
		fi.NewID = int32(len(out.Rubric) + 1)
		out.Rubric = append(out.Rubric, schema.Item{ID: fi.NewID, Type: typ, Text: it.Text, Weight: it.Weight, Polarity: schema.PolarityOf(typ)})
		change.Added = append(change.Added, fi)
		sum.Admitted++
	}
	if len(change.Dropped) == 0 && len(change.Added) == 0 {
		return rec, nil
	}
	sum.Changed++
	out.Rollouts = make([]schema.Rollout, len(rec.Rollouts))
	for r, ro := range rec.Rollouts {
		ro.Satisfaction = []schema.Satisfaction{}
		if len(change.Added) == 0 {
			for _, v := range rec.Rollouts[r].Satisfaction {
				if id, ok := newID[v.ID]; ok {
					v.ID = id
					ro.Satisfaction = append(ro.Satisfaction, v)
				}
			}
		}
		out.Rollouts[r] = ro
	}
	if len(change.Added) > 0 {
		sum.VerdictsCleared++
	}
	return &out, change
}

// restoreRetired keeps retired items the style's rules need (srar: a
// SUGGEST item; factual_process: three items), in rubric order.
func restoreRetired(rec *schema.Record, keep []bool, retired map[int32]bool) {
	kept := func() []schema.Item { // renumbered, as they will be
		var out []schema.Item
		for j, it := range rec.Rubric {
			if keep[j] {
				it.ID = int32(len(out) + 1)
				out = append(out, it)
			}
		}
		return out
	}
	for j := range rec.Rubric {
		if len(kept()) > 0 && schema.RubricViolations(rec.Style, kept(), 0) == nil {
			return
		}
		keep[j] = true
	}
}

func keptReason(it schema.Item) string {
	if it.Type == schema.TypeAnswer {
		return "an ANSWER item is never dropped"
	}
	return "the style's rules need it"
}

// styleType is the item type an admitted criterion takes in a rubric of
// style: srar has no PROCESS (a step a solution takes is a SUGGEST),
// factual_process no PITFALL.
func styleType(style, typ string) (string, bool) {
	switch {
	case style == schema.StyleSRaR && typ == schema.TypeProcess:
		return schema.TypeSuggest, true
	case style == schema.StyleFactualProcess && typ == schema.TypePitfall:
		return "", false
	}
	return typ, true
}

// lastEvidence is, per item, the evidence of its last decision.
func lastEvidence(events []livestate.Event) map[int32]json.RawMessage {
	out := map[int32]json.RawMessage{}
	for _, e := range events {
		if e.Item == 0 || e.Evidence == nil {
			continue
		}
		raw, err := json.Marshal(struct {
			Event    string              `json:"event"`
			Version  int64               `json:"rubric_version"`
			AtGroup  int64               `json:"at_group"`
			Evidence *livestate.Evidence `json:"evidence"`
		}{e.Kind, e.Version, e.AtGroup, e.Evidence})
		if err == nil {
			out[e.Item] = raw
		}
	}
	return out
}

// statsTempDir is where a refinement by live statistics into out is
// written until it is whole.
func statsTempDir(out string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(out)), "."+filepath.Base(filepath.Clean(out))+".from-stats-partial")
}

func newStatsWriter(cfg StatsConfig, fp string, settings map[string]string) (*writer, error) {
	w := &writer{fs: cfg.fs(), out: cfg.Out, tmp: statsTempDir(cfg.Out), fp: fp,
		recordsName: corpus.FromStatsRecordsName, summaryName: corpus.FromStatsName}
	return w, w.open(corpus.Options{ShardRows: cfg.ShardRows, ToolVersion: cfg.ToolVersion, Logger: cfg.Logger}, settings)
}

// WriteStatsText writes what a refinement by live statistics did, for a
// person.
func WriteStatsText(w io.Writer, s *corpus.FromStats, out string) {
	fmt.Fprintf(w, "refined %s into %s with the live statistics of %s (replicas %s)\n", s.Source, out, s.StateDir, strings.Join(s.Replicas, ", "))
	fmt.Fprintf(w, "records: %d read, %d with live statistics of their rubric (%d groups), %d changed\n", s.Records, s.Matched, s.Groups, s.Changed)
	fmt.Fprintf(w, "unchanged: %d never scored, %d scored with another rubric, %d kept by two replicas\n", s.NotInStats, s.RubricDiffers, s.Split)
	fmt.Fprintf(w, "items: %d retired and dropped, %d retired and kept (ANSWER items, the style's rules), %d elicited and added, %d elicited and not added (no such type in the style)\n",
		s.Retired, s.RetiredKept, s.Admitted, s.AdmittedSkipped)
	if s.VerdictsCleared > 0 {
		fmt.Fprintf(w, "verdicts: cleared on the stored rollouts of the %d records that gained criteria (they do not cover them); run the empirical stage on %s to measure them\n", s.VerdictsCleared, out)
	}
	fmt.Fprintf(w, "per record: %s\n", filepath.Join(out, corpus.FromStatsRecordsName))
}
