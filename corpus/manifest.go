package corpus

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// Manifest lists the committed shards of a run. A shard counts as done work
// only once it is listed here (or adopted by the resume scan).
type Manifest struct {
	SpecVersion    string      `json:"spec_version"`
	ToolVersion    string      `json:"tool_version"`
	JobFingerprint string      `json:"job_fingerprint"` // the job of the latest session
	Jobs           []JobEntry  `json:"jobs,omitempty"`  // every job that ran here, oldest first
	Shards         []ShardInfo `json:"shards"`
	Rows           int64       `json:"rows"`
	UpdatedAt      time.Time   `json:"updated_at"`
	// Inputs is what the latest session read: each input file's size,
	// content hash and rows. Empty in manifests written before inputs
	// were recorded.
	Inputs []InputFile `json:"inputs,omitempty"`
}

// InputFile is one input file as a run read it.
type InputFile struct {
	Path     string `json:"path"` // as the job names it (a directory's files under it)
	Bytes    int64  `json:"bytes"`
	XXHash64 string `json:"xxhash64"` // 16 lower-case hex digits of the file's bytes
	Rows     int64  `json:"rows"`     // non-blank lines (JSONL), rows (Parquet), 1 (a document file)
}

// JobEntry is one job in the history of a run directory: its fingerprint,
// its settings as the pipeline names them, and how many records it made.
type JobEntry struct {
	Fingerprint string            `json:"fingerprint"`
	Settings    map[string]string `json:"settings,omitempty"`
	FirstSeen   time.Time         `json:"first_seen"`
	LastSeen    time.Time         `json:"last_seen"`
	Records     int64             `json:"records"`
}

// Mixed reports whether records of more than one job are in the corpus.
func (m Manifest) Mixed() bool {
	n := 0
	for _, j := range m.Jobs {
		if j.Records > 0 {
			n++
		}
	}
	return n > 1
}

// ShardInfo describes one committed shard. Its records are sorted by id, so
// FirstID and LastID bound the ids it holds.
type ShardInfo struct {
	File     string `json:"file"` // relative to the run directory: shards/part-00000.parquet
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
	XXHash64 string `json:"xxhash64"` // 16 lower-case hex digits of the file bytes
	FirstID  string `json:"first_id"`
	LastID   string `json:"last_id"`
	// ModTimeNS is the shard's modification time when it was listed (Unix
	// nanoseconds); a resume that finds the same size and time does not hash
	// the shard again.
	ModTimeNS int64 `json:"mtime_ns,omitempty"`
	// IDsXXHash64 is the checksum of the shard's id list (part-N.ids next to
	// it), which a resume reads instead of the shard. Empty in manifests
	// written before id lists existed; the next resume writes them.
	IDsXXHash64 string `json:"ids_xxhash64,omitempty"`
}

var (
	shardNameRE = regexp.MustCompile(`^part-([0-9]{5,9})\.parquet$`)
	hashRE      = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// shardIndex parses the index out of a shard file name (no directory).
func shardIndex(name string) (int, bool) {
	m := shardNameRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

func shardName(idx int) string     { return fmt.Sprintf("part-%05d.parquet", idx) }
func shardTmpName(idx int) string  { return fmt.Sprintf(".part-%05d.tmp", idx) }
func shardRelPath(idx int) string  { return shardsDir + "/" + shardName(idx) }
func hashString(sum uint64) string { return fmt.Sprintf("%016x", sum) }

// index is the shard's index, from its file name (checked by parseManifest).
func (s ShardInfo) index() int {
	idx, _ := shardIndex(filepath.Base(s.File))
	return idx
}

// ReadManifest reads and checks dir/manifest.json without taking the run
// lock. A missing manifest is an error wrapping fs.ErrNotExist.
func ReadManifest(dir string) (Manifest, error) { return readManifest(fsys.OS, dir) }

func readManifest(fsy fsys.FS, dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := fsys.ReadFile(fsy, path)
	if err != nil {
		return Manifest{}, fmt.Errorf("reading manifest: %w", err)
	}
	return parseManifest(path, data)
}

func parseManifest(path string, data []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("manifest %s is corrupt: %w", path, err)
	}
	seen := make(map[int]bool, len(m.Shards))
	var rows int64
	for i, s := range m.Shards {
		dir, name := filepath.Split(s.File)
		idx, ok := shardIndex(name)
		if !ok || dir != shardsDir+"/" {
			return Manifest{}, fmt.Errorf("manifest %s is corrupt: shard %d has bad file name %q", path, i, s.File)
		}
		if seen[idx] {
			return Manifest{}, fmt.Errorf("manifest %s is corrupt: shard %s listed twice", path, s.File)
		}
		seen[idx] = true
		if s.Rows <= 0 || s.Bytes <= 0 || !hashRE.MatchString(s.XXHash64) || s.FirstID == "" || s.LastID == "" {
			return Manifest{}, fmt.Errorf("manifest %s is corrupt: shard %s has incomplete fields", path, s.File)
		}
		if s.IDsXXHash64 != "" && !hashRE.MatchString(s.IDsXXHash64) {
			return Manifest{}, fmt.Errorf("manifest %s is corrupt: shard %s has a bad ids_xxhash64", path, s.File)
		}
		rows += s.Rows
	}
	if rows != m.Rows {
		return Manifest{}, fmt.Errorf("manifest %s is corrupt: rows %d but its shards hold %d", path, m.Rows, rows)
	}
	fps := make(map[string]bool, len(m.Jobs))
	for i, j := range m.Jobs {
		if j.Fingerprint == "" || fps[j.Fingerprint] || j.Records < 0 {
			return Manifest{}, fmt.Errorf("manifest %s is corrupt: job %d has an empty, repeated or negative entry", path, i)
		}
		fps[j.Fingerprint] = true
	}
	return m, nil
}

func (m Manifest) clone() Manifest {
	m.Shards = slices.Clone(m.Shards)
	m.Jobs = slices.Clone(m.Jobs)
	m.Inputs = slices.Clone(m.Inputs)
	for i := range m.Jobs {
		m.Jobs[i].Settings = maps.Clone(m.Jobs[i].Settings)
	}
	return m
}

// sortShards orders the shards by index and recounts the rows.
func (m *Manifest) sortShards() {
	slices.SortFunc(m.Shards, func(a, b ShardInfo) int { return a.index() - b.index() })
	m.Rows = 0
	for _, s := range m.Shards {
		m.Rows += s.Rows
	}
}

// job returns the history entry of fingerprint, adding it if it is new.
func (m *Manifest) job(fingerprint string, now time.Time) *JobEntry {
	for i := range m.Jobs {
		if m.Jobs[i].Fingerprint == fingerprint {
			return &m.Jobs[i]
		}
	}
	m.Jobs = append(m.Jobs, JobEntry{Fingerprint: fingerprint, FirstSeen: now, LastSeen: now})
	return &m.Jobs[len(m.Jobs)-1]
}

// countRecords adds n records per fingerprint to the history; records
// without a fingerprint count for the current job, if any.
func (m *Manifest) countRecords(byFingerprint map[string]int64, now time.Time) {
	for _, fp := range slices.Sorted(maps.Keys(byFingerprint)) {
		n := byFingerprint[fp]
		if fp == "" {
			fp = m.JobFingerprint
		}
		if fp != "" {
			m.job(fp, now).Records += n
		}
	}
}

// writeManifest writes r.man atomically. The first write of a new run
// directory happens here, at its first commit, never at Open.
func (r *Run) writeManifest() error {
	m := r.man.clone()
	if m.Shards == nil {
		m.Shards = []ShardInfo{}
	}
	m.SpecVersion = schema.SpecVersion
	if r.opt.ToolVersion != "" { // compaction and repair make no records: keep the version of the run that did
		m.ToolVersion = r.opt.ToolVersion
	}
	m.UpdatedAt = time.Now().UTC()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	data = append(data, '\n')
	if err := fsys.WriteFileAtomic(r.fs, r.layout.Manifest(), data, 0o644); err != nil {
		return r.fatal(fmt.Errorf("writing manifest: %w", err))
	}
	r.man = m
	r.dirty = false
	r.onDisk = true
	return nil
}
