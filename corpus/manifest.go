package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// ManifestName is the manifest file inside a run directory.
const ManifestName = "manifest.json"

// Manifest lists the committed shards of a run. A shard counts as done work
// only once it is listed here (or adopted by the resume scan).
type Manifest struct {
	SpecVersion    string      `json:"spec_version"`
	ToolVersion    string      `json:"tool_version"`
	JobFingerprint string      `json:"job_fingerprint"`
	Shards         []ShardInfo `json:"shards"`
	Rows           int64       `json:"rows"`
	UpdatedAt      time.Time   `json:"updated_at"`
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

// ReadManifest reads and checks dir/manifest.json without taking the run
// lock. A missing manifest is an error wrapping fs.ErrNotExist.
func ReadManifest(dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
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
		rows += s.Rows
	}
	if rows != m.Rows {
		return Manifest{}, fmt.Errorf("manifest %s is corrupt: rows %d but its shards hold %d", path, m.Rows, rows)
	}
	return m, nil
}

func (m Manifest) clone() Manifest {
	m.Shards = append([]ShardInfo(nil), m.Shards...)
	return m
}
