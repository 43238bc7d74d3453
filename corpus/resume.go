package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// resume rebuilds the run state from disk.
func (r *Run) resume() error {
	if err := r.removeStaleTemps(); err != nil {
		return err
	}
	man, err := readManifest(r.fs, r.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		man = Manifest{SpecVersion: schema.SpecVersion}
	case err != nil:
		return err
	case man.SpecVersion == "2":
		return fmt.Errorf("run directory %s was written with record spec 2 (tool %s); this tool writes spec %s, which adds the grounded column, and does not mix the two layouts in one run: "+
			"its records stay readable (validate, export, status and rewardd read them); to add to it, finish it with the tool version that made it, "+
			"or build a new run with --out NEW --cache %s so that every request it answered is reused at no cost",
			r.dir, man.ToolVersion, schema.SpecVersion, r.layout.Cache())
	case man.SpecVersion != schema.SpecVersion:
		return fmt.Errorf("manifest %s has spec version %q; this tool writes %q",
			r.layout.Manifest(), man.SpecVersion, schema.SpecVersion)
	default:
		r.onDisk = true
	}
	r.man = man
	changed := false
	listed := make(map[string]bool, len(man.Shards))
	var damaged []DamagedShard
	for i := range r.man.Shards {
		s := &r.man.Shards[i]
		listed[filepath.Base(s.File)] = true
		r.next = max(r.next, s.index()+1)
		ids, relisted, why, err := r.checkListed(s)
		if err != nil {
			return err
		}
		if why != "" {
			damaged = append(damaged, DamagedShard{File: s.File, Rows: s.Rows, Reason: why})
			continue
		}
		changed = changed || relisted
		r.addDone(ids, s.File)
	}
	if len(damaged) > 0 {
		return &DamageError{Dir: r.dir, Shards: damaged}
	}
	adopted, err := r.scanUnlisted(listed)
	if err != nil {
		return err
	}
	if err := r.scanBroken(); err != nil {
		return err
	}
	r.man.sortShards()
	if changed || adopted {
		r.dirty = true
		if err := r.writeManifest(); err != nil {
			return err
		}
	}
	return r.loadFailures()
}

// stateFiles are the run directory's files written whole through a
// temporary file (fsys.WriteFileAtomic).
var stateFiles = []string{JobName, ManifestName, ReportName, FailuresName, PlanName}

// removeStaleTemps removes the temporary files of the run directory's
// state files that a killed writer left (each writer has its own, see
// fsys.TempPath, so none is reused). The run's lock is held: no writer of
// this directory is running.
func (r *Run) removeStaleTemps() error {
	entries, err := r.fs.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("listing run directory: %w", err)
	}
	for _, e := range entries {
		for _, target := range stateFiles {
			if !fsys.IsTemp(e.Name(), target) {
				continue
			}
			if err := r.fs.Remove(filepath.Join(r.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing a stale temporary file: %w", err)
			}
			r.log.Info("removed a temporary file an interrupted write left", "file", e.Name())
		}
	}
	return nil
}

// checkListed checks a listed shard and returns its ids. The cheap path: the
// shard has the size and modification time the manifest recorded, and its
// id list matches the entry. Otherwise the shard is hashed and its id column
// read. A shard that is missing or whose bytes differ from its entry is
// damaged (why says how), whatever its rows read as: it is never listed
// again with a new hash. relisted reports that s was updated (a shard whose
// modification time alone changed, or whose id list was rewritten), so the
// manifest must be rewritten.
func (r *Run) checkListed(s *ShardInfo) (ids []string, relisted bool, why string, err error) {
	path := filepath.Join(r.dir, filepath.FromSlash(s.File))
	st, err := r.fs.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, "missing", nil
	}
	if err != nil {
		return nil, false, "", fmt.Errorf("checking listed shard %s: %w", s.File, err)
	}
	if st.Size() != s.Bytes {
		return nil, false, fmt.Sprintf("%d bytes, the manifest recorded %d (truncated or overwritten)", st.Size(), s.Bytes), nil
	}
	if s.IDsXXHash64 != "" && st.ModTime().UnixNano() == s.ModTimeNS {
		l, why := r.readIDList(s)
		if why == "" {
			return l.ids, false, "", nil
		}
		r.log.Warn("id list of a shard is unusable; reading the shard instead", "file", s.File, "reason", why)
	}
	info, ids, why, err := r.verifyListed(s)
	if err != nil || why != "" {
		return nil, false, why, err
	}
	info.IDsXXHash64, err = writeIDList(r.fs, r.layout.Shards(), s.index(), info.XXHash64, ids)
	if err != nil {
		return nil, false, "", r.fatal(fmt.Errorf("rewriting the id list of %s: %w", s.File, err))
	}
	*s = info
	return ids, true, "", nil
}

// readIDList reads and checks the id list of a listed shard; why is "" when
// it is usable.
func (r *Run) readIDList(s *ShardInfo) (l idList, why string) {
	data, err := fsys.ReadFile(r.fs, filepath.Join(r.layout.Shards(), sidecarName(s.index())))
	if err != nil {
		return idList{}, err.Error()
	}
	l, err = decodeIDs(data)
	if err != nil {
		return idList{}, err.Error()
	}
	return l, l.matches(*s)
}

// verifyListed hashes a listed shard and reads its ids; why is not "" when
// its bytes differ from its entry or it cannot be read.
func (r *Run) verifyListed(s *ShardInfo) (info ShardInfo, ids []string, why string, err error) {
	path := filepath.Join(r.dir, filepath.FromSlash(s.File))
	info, ids, ierr := inspectShard(r.fs, path)
	info.File = s.File
	switch {
	case ierr != nil:
		return ShardInfo{}, nil, "unreadable: " + ierr.Error(), nil
	case info.Bytes != s.Bytes || info.XXHash64 != s.XXHash64:
		return ShardInfo{}, nil, fmt.Sprintf("its bytes changed on disk (xxhash64 %s, the manifest recorded %s)", info.XXHash64, s.XXHash64), nil
	case info.Rows != s.Rows || info.FirstID != s.FirstID || info.LastID != s.LastID:
		return ShardInfo{}, nil, "", fmt.Errorf("listed shard %s matches its hash but not its manifest entry (rows %d, ids %s..%s)",
			s.File, info.Rows, info.FirstID, info.LastID)
	}
	return info, ids, "", nil
}

func (r *Run) addDone(ids []string, file string) {
	for _, id := range ids {
		if r.done.Has(id) {
			r.log.Warn("id appears in more than one shard", "id", id, "file", file)
		}
		r.done.Set(id, struct{}{})
	}
}

// scanUnlisted deals with what shards/ holds beyond the listed shards: temp
// files of an unfinished commit are removed; an unlisted shard is adopted
// when its ids are new (a crash between its rename and the manifest write),
// removed when all its ids are in listed shards (a compaction cut short,
// before or after its manifest switch), and moved aside when unreadable or
// when it overlaps the listed shards only in part; id lists without their
// shard are removed. adopted reports that the manifest gained shards.
func (r *Run) scanUnlisted(listed map[string]bool) (adopted bool, err error) {
	sdir := r.layout.Shards()
	entries, err := r.fs.ReadDir(sdir)
	if err != nil {
		return false, fmt.Errorf("listing shards: %w", err)
	}
	var idLists []string
	removed := false
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".part-") && strings.HasSuffix(name, ".tmp") {
			if err := r.fs.Remove(filepath.Join(sdir, name)); err != nil {
				return false, fmt.Errorf("removing stale temp shard: %w", err)
			}
			r.log.Info("removed an unfinished shard left by an earlier run", "file", name)
			removed = true
			continue
		}
		if strings.HasSuffix(name, ".ids") {
			idLists = append(idLists, name)
			continue
		}
		idx, ok := shardIndex(name)
		if !ok || listed[name] || !e.Type().IsRegular() {
			continue
		}
		r.next = max(r.next, idx+1)
		got, err := r.unlisted(idx)
		if err != nil {
			return false, err
		}
		adopted = adopted || got
		removed = removed || !got
	}
	kept := make(map[string]bool, len(r.man.Shards))
	for _, s := range r.man.Shards {
		kept[sidecarName(s.index())] = true
	}
	for _, name := range idLists {
		if kept[name] {
			continue
		}
		if err := r.fs.Remove(filepath.Join(sdir, name)); err != nil {
			return false, fmt.Errorf("removing an id list without its shard: %w", err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(r.fs, sdir); err != nil {
			return false, r.fatal(err)
		}
	}
	return adopted, nil
}

// unlisted adopts, removes or moves aside the unlisted shard idx; adopted
// reports which.
func (r *Run) unlisted(idx int) (adopted bool, err error) {
	name := shardName(idx)
	path := filepath.Join(r.layout.Shards(), name)
	info, ids, err := inspectShard(r.fs, path)
	if err != nil {
		return false, r.moveAside(name, err)
	}
	done := 0
	for _, id := range ids {
		if r.done.Has(id) {
			done++
		}
	}
	switch {
	case done == len(ids):
		if err := r.fs.Remove(path); err != nil {
			return false, fmt.Errorf("removing a shard superseded by compaction: %w", err)
		}
		r.log.Info("removed a shard whose records are all in listed shards (a compaction was cut short)", "file", name, "rows", len(ids))
		return false, nil
	case done > 0:
		return false, r.moveAside(name, fmt.Errorf("%d of its %d ids are already in listed shards", done, len(ids)))
	}
	info.File = shardRelPath(idx)
	info.IDsXXHash64, err = writeIDList(r.fs, r.layout.Shards(), idx, info.XXHash64, ids)
	if err != nil {
		return false, r.fatal(fmt.Errorf("writing the id list of adopted shard %s: %w", name, err))
	}
	byFP, err := shardFingerprints(r.fs, path)
	if err != nil {
		return false, err
	}
	r.man.Shards = append(r.man.Shards, info)
	r.man.countRecords(byFP, time.Now().UTC())
	r.addDone(ids, info.File)
	r.log.Warn("adopted a committed shard missing from the manifest", "file", info.File, "rows", info.Rows)
	return true, nil
}

// moveAside moves an unusable unlisted shard into shards/broken/.
func (r *Run) moveAside(name string, why error) error {
	bdir := filepath.Join(r.layout.Shards(), brokenDir)
	if err := fsys.MkdirAllSynced(r.fs, bdir, 0o755); err != nil {
		return r.fatal(fmt.Errorf("moving broken shard aside: %w", err))
	}
	dst := filepath.Join(bdir, name)
	for i := 1; ; i++ {
		if _, err := r.fs.Stat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = filepath.Join(bdir, fmt.Sprintf("%s.%d", name, i))
	}
	if err := fsys.RenameSynced(r.fs, filepath.Join(r.layout.Shards(), name), dst); err != nil {
		return r.fatal(fmt.Errorf("moving broken shard aside: %w", err))
	}
	r.log.Warn("moved an unusable shard aside; its rows will be made again by the next run",
		"file", filepath.Join(shardsDir, name), "to", dst, "reason", why.Error())
	return nil
}

// scanBroken keeps indexes of shards moved aside from being reused.
func (r *Run) scanBroken() error {
	entries, err := r.fs.ReadDir(filepath.Join(r.layout.Shards(), brokenDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing broken shards: %w", err)
	}
	for _, e := range entries {
		name, _, _ := strings.Cut(e.Name(), ".parquet")
		if idx, ok := shardIndex(name + ".parquet"); ok {
			r.next = max(r.next, idx+1)
		}
	}
	return nil
}

// fingerprintRow projects a record on its job fingerprint.
type fingerprintRow struct {
	Provenance struct {
		JobFingerprint string `parquet:"job_fingerprint"`
	} `parquet:"provenance"`
}

// shardFingerprints counts the records of a shard by job fingerprint.
func shardFingerprints(fsy fsys.FS, path string) (map[string]int64, error) {
	out := map[string]int64{}
	_, err := scanFileFS(fsy, path, openShard, func(row *fingerprintRow) error {
		out[row.Provenance.JobFingerprint]++
		return nil
	})
	return out, err
}
