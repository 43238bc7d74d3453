package review

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/schema"
)

// Shown rollouts: a page shows a few of a record's rollouts, each cut to a
// length a person reads.
const (
	shownPerSide    = 2    // correct ones, and as many flawed ones
	shownRolloutLen = 6000 // characters of one rollout's text
)

// Corpus is a corpus as a review shows it: its records held in memory
// with a few rollouts each, and the fingerprint its logs carry.
type Corpus struct {
	Paths       []string
	Fingerprint string
	// Running: a distill run held the run directory when it was read; the
	// records are those committed by then (a snapshot).
	Running bool
	Records []*Record
	// Grounded counts the grounded-style records, whose criteria a review
	// does not show yet; they are left out.
	Grounded int
	Problems []audit.Problem
	byID     map[string]*Record
}

// Record is one record to review.
type Record struct {
	ID, Source, Split, Style string
	Problem, Answer          string
	Reference                string
	NCorrect, NRollouts      int
	PassRate                 float64
	Rollouts                 []schema.Rollout // the shown ones, text cut
	Items                    []Item
	Risk                     int // the largest risk of its items
}

// Item is one rubric item with the figures a reviewer weighs.
type Item struct {
	schema.Item
	// Edge is the discrimination edge: good-side satisfaction among the
	// correct rollouts minus among the flawed ones; nil when either side
	// has no satisfaction verdicts.
	Edge *float64
	Risk int
	// Why lists the reasons of Risk, for the page.
	Why []string
}

// Record returns the record with id, or nil.
func (c *Corpus) Record(id string) *Record { return c.byID[id] }

// Items counts the items of every record.
func (c *Corpus) Items() int {
	n := 0
	for _, r := range c.Records {
		n += len(r.Items)
	}
	return n
}

// Load reads the corpus in (any corpus validate reads) for review.
// Records that repeat an id are read once (the first).
func Load(ctx context.Context, in *audit.Input) (*Corpus, error) {
	c := &Corpus{Paths: in.Paths, Running: in.Running, byID: map[string]*Record{}}
	fp, err := scanFingerprint(ctx, in, func(rec *schema.Record) {
		if rec.Grounded != nil || rec.Style == "grounded" {
			c.Grounded++
			return
		}
		if c.byID[rec.ID] != nil {
			return
		}
		r := newRecord(rec)
		c.Records = append(c.Records, r)
		c.byID[r.ID] = r
	}, func(p audit.Problem) { c.Problems = append(c.Problems, p) })
	if err != nil {
		return nil, err
	}
	c.Fingerprint = fp
	return c, nil
}

// Fingerprint is the review fingerprint of the corpus in: what its logs
// carry, and what `distill export --review` checks a log against.
func Fingerprint(ctx context.Context, in *audit.Input) (string, error) {
	return scanFingerprint(ctx, in, func(*schema.Record) {}, func(audit.Problem) {})
}

// scanFingerprint reads every record of in, passes it to fn, and returns
// the corpus's fingerprint.
func scanFingerprint(ctx context.Context, in *audit.Input, fn func(*schema.Record), bad func(audit.Problem)) (string, error) {
	fps := map[string]bool{}
	var ids []string
	err := audit.ScanRecords(ctx, in, func(rec *schema.Record) error {
		if rec.Provenance.JobFingerprint != "" {
			fps[rec.Provenance.JobFingerprint] = true
		}
		ids = append(ids, rec.ID)
		fn(rec)
		return nil
	}, bad)
	if err != nil {
		return "", fmt.Errorf("reading the corpus for review: %w", err)
	}
	return fingerprintOf(fps, in, ids), nil
}

// fingerprintOf hashes the job fingerprints the records were made under
// (a verl export's come from export.json), so that a run, its jsonl export
// and its verl export have one fingerprint and a run still growing keeps
// it. A corpus without any hashes its record ids.
func fingerprintOf(fps map[string]bool, in *audit.Input, ids []string) string {
	keys := make([]string, 0, len(fps))
	for k := range fps {
		keys = append(keys, k)
	}
	if len(keys) == 0 && in.Export != nil {
		keys = append(keys, in.Export.JobFingerprints...)
	}
	kind := "jobs"
	if len(keys) == 0 {
		kind, keys = "ids", slices.Clone(ids)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	return fmt.Sprintf("%016x", xxhash.Sum64String("review-fingerprint/1 "+kind+"\n"+strings.Join(keys, "\n")))
}

// newRecord keeps what a page shows of rec and measures its items.
func newRecord(rec *schema.Record) *Record {
	r := &Record{ID: rec.ID, Source: rec.Source, Split: rec.Split, Style: rec.Style, Problem: rec.Problem, Answer: rec.Answer,
		NCorrect: int(rec.NCorrect), NRollouts: len(rec.Rollouts), PassRate: rec.PassRate}
	if rec.Reference != nil {
		r.Reference = *rec.Reference
	}
	r.Rollouts = shownRollouts(rec.Rollouts)
	for _, it := range rec.Rubric {
		item := Item{Item: it, Edge: edgeOf(it, rec.Rollouts)}
		item.Risk, item.Why = riskOf(&item)
		r.Risk = max(r.Risk, item.Risk)
		r.Items = append(r.Items, item)
	}
	return r
}

// shownRollouts picks the first correct and flawed rollouts, texts cut.
func shownRollouts(all []schema.Rollout) []schema.Rollout {
	var out []schema.Rollout
	correct, flawed := 0, 0
	for _, ro := range all {
		switch {
		case ro.Correct && correct < shownPerSide:
			correct++
		case !ro.Correct && flawed < shownPerSide:
			flawed++
		default:
			continue
		}
		if r := []rune(ro.Text); len(r) > shownRolloutLen {
			ro.Text = string(r[:shownRolloutLen]) + " [...]"
		}
		ro.Satisfaction = nil
		out = append(out, ro)
	}
	return out
}

// edgeOf is the item's discrimination edge over the rollouts' satisfaction
// verdicts: the good-side rate among the correct minus among the flawed,
// where the good side of a PITFALL is not satisfying it.
func edgeOf(it schema.Item, rollouts []schema.Rollout) *float64 {
	var good, n [2]int // [0] correct, [1] flawed
	for _, ro := range rollouts {
		side := 1
		if ro.Correct {
			side = 0
		}
		for _, s := range ro.Satisfaction {
			if s.ID != it.ID {
				continue
			}
			n[side]++
			if s.Satisfied == (it.Polarity >= 0) {
				good[side]++
			}
		}
	}
	if n[0] == 0 || n[1] == 0 {
		return nil
	}
	e := float64(good[0])/float64(n[0]) - float64(good[1])/float64(n[1])
	return &e
}

// LowEdge is the edge under which an item separates too little.
const LowEdge = 0.1

// riskOf scores how likely an item is to be wrong, and says why: the
// judge and the empirical rule disagree (3), the judge said invalid (2),
// the empirical rule said invalid (2), the edge is low (1).
func riskOf(it *Item) (int, []string) {
	risk := 0
	var why []string
	if it.Valid != nil && it.EmpiricalValid != nil && *it.Valid != *it.EmpiricalValid {
		risk += 3
		why = append(why, "judge and empirical figures disagree")
	}
	if it.Valid != nil && !*it.Valid {
		risk += 2
		why = append(why, "judge said invalid")
	}
	if it.EmpiricalValid != nil && !*it.EmpiricalValid {
		risk += 2
		why = append(why, "empirically invalid")
	}
	if it.Edge != nil && *it.Edge < LowEdge {
		risk++
		why = append(why, "low edge")
	}
	return risk, why
}
