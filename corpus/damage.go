package corpus

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// ErrDamaged is wrapped when a listed shard is missing or its bytes no
// longer match its manifest entry. Such a shard is never listed again with
// its new hash: `distill repair` (Repair) moves it aside, and the next run
// makes its records again.
var ErrDamaged = errors.New("damaged shard")

// DamagedShard is a listed shard that is missing or whose bytes no longer
// match its manifest entry.
type DamagedShard struct {
	File   string `json:"file"` // relative to the run directory
	Rows   int64  `json:"rows"` // what the manifest says it held
	Reason string `json:"reason"`
}

// DamageError lists the damaged shards of a run directory and says how to
// recover.
type DamageError struct {
	Dir    string
	Shards []DamagedShard
}

func (e *DamageError) Error() string {
	var b strings.Builder
	var rows int64
	for i, s := range e.Shards {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%d records): %s", s.File, s.Rows, s.Reason)
		rows += s.Rows
	}
	return fmt.Sprintf("%d listed shard(s) damaged: %s. Their %d records are not usable. To recover, run `distill repair %s` "+
		"(it moves the damaged shards into %s/%s/ and unlists them), then the same `distill run` again: it makes those "+
		"records again, from the response cache for every request answered before, so nothing is paid twice",
		len(e.Shards), b.String(), rows, e.Dir, ShardsDir, brokenDir)
}

func (e *DamageError) Unwrap() error { return ErrDamaged }

// damageOf checks the bytes of the listed shard s against its entry; full
// hashes even when size and modification time are unchanged. It returns ""
// when the shard is intact.
func damageOf(fsy fsys.FS, dir string, s ShardInfo, full bool) (string, error) {
	path := filepath.Join(dir, filepath.FromSlash(s.File))
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "missing", nil
	}
	if err != nil {
		return "", fmt.Errorf("checking shard %s: %w", s.File, err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	return damageOfOpen(f, path, s, full)
}

// damageOfOpen is damageOf for the open shard file f (named path).
func damageOfOpen(f interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
}, path string, s ShardInfo, full bool) (string, error) {
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("checking shard %s: %w", s.File, err)
	}
	if st.Size() != s.Bytes {
		return fmt.Sprintf("%d bytes, the manifest recorded %d (truncated or overwritten)", st.Size(), s.Bytes), nil
	}
	if !full && s.ModTimeNS != 0 && st.ModTime().UnixNano() == s.ModTimeNS {
		return "", nil
	}
	h := xxhash.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, st.Size()), make([]byte, 64<<10)); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	if sum := hashString(h.Sum64()); sum != s.XXHash64 {
		return fmt.Sprintf("its bytes changed on disk (xxhash64 %s, the manifest recorded %s)", sum, s.XXHash64), nil
	}
	return "", nil
}

// CheckShards reports the damaged listed shards of the run directory dir
// without taking its lock, so it works while a run goes on: a shard with the
// size and modification time its entry recorded is taken as intact, any
// other is hashed. A shard that a running compaction removed is not damage:
// the check is repeated over the new manifest.
func CheckShards(dir string) ([]DamagedShard, error) {
	for attempt := 0; ; attempt++ {
		m, err := readManifest(fsys.OS, dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var damaged []DamagedShard
		for _, s := range m.Shards {
			why, err := damageOf(fsys.OS, dir, s, false)
			if err != nil {
				return nil, err
			}
			if why != "" {
				damaged = append(damaged, DamagedShard{File: s.File, Rows: s.Rows, Reason: why})
			}
		}
		if len(damaged) == 0 || attempt == 2 {
			return damaged, nil
		}
		again, err := readManifest(fsys.OS, dir)
		if err != nil || again.UpdatedAt.Equal(m.UpdatedAt) {
			return damaged, nil
		}
	}
}

// Repaired is what Repair did.
type Repaired struct {
	Damaged  []DamagedShard `json:"damaged"`   // shards moved aside (or, when missing, unlisted)
	RowsLost int64          `json:"rows_lost"` // the records they held, to be made again
}

// Repair locks the run directory dir, hashes every listed shard in full,
// moves the damaged ones into shards/broken/ and unlists them, recounting
// the records of each job from the shards that remain. Every other record
// stays; the next run makes the lost ones again, its requests answered from
// the response cache. A run without damage is left as it is.
func Repair(dir string, opt Options) (Repaired, error) {
	var res Repaired
	r, err := newRun(dir, opt)
	if err != nil {
		return res, err
	}
	if _, err := r.fs.Stat(r.layout.Manifest()); err != nil {
		return res, fmt.Errorf("%s is not a run directory (no %s): %w", dir, ManifestName, err)
	}
	r.lock, _, err = acquireLock(r.fs, r.layout)
	if err != nil {
		return res, err
	}
	defer func() { _ = r.lock.release() }() // the kernel drops a lock it failed to drop when the process ends
	if r.man, err = readManifest(r.fs, dir); err != nil {
		return res, err
	}
	for _, s := range r.man.Shards {
		why, err := damageOf(r.fs, dir, s, true)
		if err != nil {
			return res, err
		}
		if why != "" {
			res.Damaged = append(res.Damaged, DamagedShard{File: s.File, Rows: s.Rows, Reason: why})
			res.RowsLost += s.Rows
		}
	}
	if len(res.Damaged) == 0 {
		return res, nil
	}
	for _, d := range res.Damaged {
		if err := r.unlistDamaged(d); err != nil {
			return res, err
		}
	}
	if err := r.recountJobs(); err != nil {
		return res, err
	}
	r.man.sortShards()
	if err := r.writeManifest(); err != nil {
		return res, err
	}
	return res, fsys.SyncDir(r.fs, r.layout.Shards())
}

// unlistDamaged moves the damaged shard d aside (when it is there at all),
// removes its id list and drops it from the manifest in memory.
func (r *Run) unlistDamaged(d DamagedShard) error {
	name := filepath.Base(d.File)
	if _, err := r.fs.Stat(filepath.Join(r.layout.Shards(), name)); err == nil {
		if err := r.moveAside(name, errors.New(d.Reason)); err != nil {
			return err
		}
	}
	idx, _ := shardIndex(name)
	if err := r.fs.Remove(filepath.Join(r.layout.Shards(), sidecarName(idx))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the id list of %s: %w", d.File, err)
	}
	r.man.Shards = slices.DeleteFunc(r.man.Shards, func(s ShardInfo) bool { return s.File == d.File })
	return nil
}

// recountJobs sets each job's record count from the listed shards.
func (r *Run) recountJobs() error {
	byFP := map[string]int64{}
	for _, s := range r.man.Shards {
		n, err := shardFingerprints(r.fs, filepath.Join(r.dir, filepath.FromSlash(s.File)))
		if err != nil {
			return fmt.Errorf("counting the records of %s: %w", s.File, err)
		}
		for fp, c := range n {
			byFP[fp] += c
		}
	}
	for i := range r.man.Jobs {
		r.man.Jobs[i].Records = 0
	}
	r.man.countRecords(byFP, r.man.UpdatedAt)
	return nil
}

// VerifyShards hashes every listed shard of the open run in full, whatever
// its size and modification time say: the check of `distill compact`, a
// maintenance command that can afford to read the corpus once, so damage
// that kept a shard's size and modification time (bit rot on disk) is
// found there too, not only by `distill repair`. The error is a
// *DamageError naming every damaged shard.
func (r *Run) VerifyShards() error {
	r.mu.Lock()
	shards := slices.Clone(r.man.Shards)
	r.mu.Unlock()
	var damaged []DamagedShard
	for _, s := range shards {
		why, err := damageOf(r.fs, r.dir, s, true)
		if err != nil {
			return err
		}
		if why != "" {
			damaged = append(damaged, DamagedShard{File: s.File, Rows: s.Rows, Reason: why})
		}
	}
	if len(damaged) > 0 {
		return &DamageError{Dir: r.dir, Shards: damaged}
	}
	return nil
}
