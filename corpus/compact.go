package corpus

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// Compaction is what Compact did.
type Compaction struct {
	Merged  int // small shards merged away
	Written int // shards written in their place
}

// Compact commits what is buffered, then merges small shards (fewer than
// half of ShardRows rows, as checkpoints leave them) into shards of up to
// ShardRows rows, records sorted by id. Each merge follows the commit
// protocol: the new shard is made durable and renamed into place, the
// manifest is switched to it atomically, and only then are the old files
// removed, so a kill at any instant loses nothing; the next Open removes
// whichever copy the manifest does not list.
func (r *Run) Compact() (Compaction, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c Compaction
	if err := r.writable(); err != nil {
		return c, fmt.Errorf("compacting: %w", err)
	}
	if err := r.commitLocked(); err != nil {
		return c, fmt.Errorf("compacting: %w", err)
	}
	for _, group := range r.compactionGroups() {
		if err := r.merge(group); err != nil {
			return c, fmt.Errorf("compacting: %w", err)
		}
		c.Merged += len(group)
		c.Written++
	}
	return c, nil
}

// compactionGroups packs the small shards, in index order, into groups of
// two or more whose rows fit in one shard.
func (r *Run) compactionGroups() [][]ShardInfo {
	var groups [][]ShardInfo
	var cur []ShardInfo
	var rows int64
	flush := func() {
		if len(cur) > 1 {
			groups = append(groups, cur)
		}
		cur, rows = nil, 0
	}
	for _, s := range r.man.Shards {
		if s.Rows*2 >= int64(r.opt.ShardRows) {
			continue
		}
		if rows+s.Rows > int64(r.opt.ShardRows) {
			flush()
		}
		cur = append(cur, s)
		rows += s.Rows
	}
	flush()
	return groups
}

// merge replaces the shards of group by one.
func (r *Run) merge(group []ShardInfo) error {
	var recs []schema.Record
	for _, s := range group {
		path := filepath.Join(r.dir, filepath.FromSlash(s.File))
		n, err := scanFileFS(r.fs, path, openShard, func(rec *schema.Record) error {
			recs = append(recs, *rec)
			return nil
		})
		if err != nil {
			return err
		}
		if n != s.Rows {
			return fmt.Errorf("shard %s has %d rows, the manifest says %d", s.File, n, s.Rows)
		}
	}
	slices.SortFunc(recs, func(a, b schema.Record) int { return strings.Compare(a.ID, b.ID) })
	info, renamed, err := writeShard(r.fs, r.dir, r.next, recs, r.wopt)
	if !renamed {
		return r.fatal(fmt.Errorf("writing the merged shard: %w", err))
	}
	r.next++
	r.man.Shards = slices.DeleteFunc(r.man.Shards, func(s ShardInfo) bool {
		return slices.ContainsFunc(group, func(g ShardInfo) bool { return g.File == s.File })
	})
	r.man.Shards = append(r.man.Shards, info)
	r.man.sortShards()
	r.dirty = true
	if err != nil {
		return r.fatal(fmt.Errorf("writing the merged shard: %w", err))
	}
	if err := r.writeManifest(); err != nil {
		return err
	}
	sdir := r.layout.Shards()
	for _, s := range group {
		for _, name := range []string{filepath.Base(s.File), sidecarName(s.index())} {
			if err := r.fs.Remove(filepath.Join(sdir, name)); err != nil {
				return fmt.Errorf("removing merged shard %s (the manifest no longer lists it; the next open removes it): %w", s.File, err)
			}
		}
	}
	if err := fsys.SyncDir(r.fs, sdir); err != nil {
		return r.fatal(err)
	}
	return nil
}
