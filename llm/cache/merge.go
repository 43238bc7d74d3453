package cache

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// MergeResult says what Merge copied.
type MergeResult struct {
	Sources int   // caches read
	Entries int64 // responses copied
	Repeats int64 // responses left out because an earlier source had their identity
	Damaged int64 // damaged entries of the sources, left out
	Spent   []Spend
}

// mergeGroup is how many entries Merge hands the writer at once: one
// durable write for many, not an fsync per response.
const mergeGroup = 512

// Merge writes at dst one cache holding the live responses of the
// caches at srcs, in their order (a response whose identity an earlier
// source holds is left out), each with its usage and paid as it was in its
// source (a response its source copied from a base stays unpaid), and
// spend records for what each source paid beyond its live entries, so the
// merged cache's Spent is the sum of the sources'. It is how the workers
// of a partitioned job give their merged corpus their answers and their
// accounting. dst is built beside itself and renamed over it once whole,
// so a merge killed part way leaves the old dst (or none). A missing
// source is an error; the sources are read, never written.
func Merge(dst string, srcs []string, opts ...Option) (MergeResult, error) {
	o := cacheOptions{fs: fsys.OS, log: slog.Default(), mergeAt: defaultMergeAt}
	for _, opt := range opts {
		opt(&o)
	}
	tmp := dst + ".merge"
	for _, p := range []string{tmp, IndexPath(tmp)} {
		if err := o.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return MergeResult{}, fmt.Errorf("removing an earlier merge's %s: %w", p, err)
		}
	}
	out, err := Open(tmp, WithFS(o.fs), WithLogger(o.log))
	if err != nil {
		return MergeResult{}, err
	}
	res := MergeResult{}
	for _, src := range srcs {
		if err := out.absorb(src, o, &res); err != nil {
			_ = out.Close() // the temporary merge is not put in place; err says why
			return res, err
		}
		res.Sources++
	}
	res.Spent, _ = out.Spent()
	if err := out.Close(); err != nil {
		return res, err
	}
	if err := o.fs.Rename(tmp, dst); err != nil {
		return res, fmt.Errorf("putting the merged response cache in place: %w", err)
	}
	// The index is derived: without one the next open reads the log.
	if err := o.fs.Rename(IndexPath(tmp), IndexPath(dst)); err != nil {
		_ = o.fs.Remove(IndexPath(dst)) // a stale index is checked against the log at open and rebuilt
	}
	return res, nil
}

// absorb copies the live responses of the cache at src that c does not
// hold, then the spend of src they do not carry.
func (c *Cache) absorb(src string, o cacheOptions, res *MergeResult) error {
	if _, err := o.fs.Stat(src); err != nil {
		return fmt.Errorf("merging response cache %s: %w", src, err)
	}
	s, err := openLog(src, o, true)
	if err != nil {
		return err
	}
	defer func() { _ = s.close(false) }() // opened read-only
	var live []keyLoc
	if err := s.idx.each(func(key, loc uint64) { live = append(live, keyLoc{key, loc}) }); err != nil {
		return fmt.Errorf("reading response cache %s: %w", src, err)
	}
	slices.SortFunc(live, func(a, b keyLoc) int { return cmp.Compare(locOff(a.loc), locOff(b.loc)) })
	kept := map[spendKey]Spend{}
	var group []*putRequest
	flush := func() error {
		err := c.submit(group...)
		group = group[:0]
		return err
	}
	for _, kl := range live {
		r, err := s.readRecord(kl.loc)
		if errors.Is(err, errBadEntry) {
			res.Damaged++
			continue
		}
		if err != nil {
			return fmt.Errorf("reading response cache %s: %w", src, err)
		}
		if r.kind != kindResponse {
			continue
		}
		if _, state, _ := c.lookup(Identity{Key: r.key, Digest: r.digest}); state == lookupHit {
			res.Repeats++
			continue
		}
		req, err := c.newPut(&r)
		if err != nil {
			return err
		}
		if group = append(group, req); len(group) == mergeGroup {
			if err := flush(); err != nil {
				return err
			}
		}
		res.Entries++
		if r.paid() {
			k := spendKeyOf(r.usage)
			t := kept[k]
			t.add(Spend{Responses: 1, PromptTokens: r.usage.PromptTokens, CompletionTokens: r.usage.CompletionTokens})
			kept[k] = t
		}
	}
	if err := flush(); err != nil {
		return err
	}
	carry := spendDiff(s.spend, kept)
	for _, k := range slices.SortedFunc(maps.Keys(carry), func(a, b spendKey) int {
		return cmp.Or(cmp.Compare(a.stage, b.stage), cmp.Compare(a.model, b.model), compareBool(a.batch, b.batch))
	}) {
		sp := carry[k]
		u := Usage{Stage: k.stage, Model: k.model, PromptTokens: sp.PromptTokens, CompletionTokens: sp.CompletionTokens, Batch: k.batch}
		req, err := c.newPut(&record{kind: kindSpend, flags: usageFlags(u), responses: sp.Responses, usage: u})
		if err != nil {
			return err
		}
		group = append(group, req)
	}
	return flush()
}
