package corpus

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// Verification is what Verify found in a run directory.
type Verification struct {
	Shards   int
	Rows     int64
	Bytes    int64
	Problems []string // one line per problem, naming the file
}

// OK reports whether Verify found no problem.
func (v Verification) OK() bool { return len(v.Problems) == 0 }

// Verify checks every listed shard of the run directory dir in full, as a
// plain resume does not: it hashes the bytes, reads the id column, and
// compares both with the manifest entry and the shard's id list; it also
// reports ids found in two shards, and shard files the manifest does not
// list (a commit in progress, or work the next resume adopts or removes).
// It takes no lock. The error is for a manifest that cannot be read.
func Verify(dir string) (Verification, error) { return verify(fsys.OS, dir) }

func verify(fsy fsys.FS, dir string) (Verification, error) {
	var v Verification
	m, err := readManifest(fsy, dir)
	if err != nil {
		return v, err
	}
	seen := make(map[string]string, m.Rows)
	listed := map[string]bool{}
	for _, s := range m.Shards {
		listed[filepath.Base(s.File)] = true
		v.Shards++
		v.Rows += s.Rows
		v.Bytes += s.Bytes
		ids, problem := verifyShard(fsy, dir, s)
		if problem != "" {
			v.Problems = append(v.Problems, s.File+": "+problem)
			continue
		}
		for _, id := range ids {
			if other, dup := seen[id]; dup {
				v.Problems = append(v.Problems, fmt.Sprintf("%s: id %q is also in %s", s.File, id, other))
			}
			seen[id] = s.File
		}
	}
	entries, err := fsy.ReadDir(filepath.Join(dir, shardsDir))
	if err != nil {
		return v, fmt.Errorf("listing shards: %w", err)
	}
	for _, e := range entries {
		if _, ok := shardIndex(e.Name()); ok && !listed[e.Name()] {
			v.Problems = append(v.Problems, shardsDir+"/"+e.Name()+": not listed in the manifest (a commit in progress, or work the next resume adopts or removes)")
		}
	}
	return v, nil
}

// verifyShard checks one listed shard in full and returns its ids.
func verifyShard(fsy fsys.FS, dir string, s ShardInfo) (ids []string, problem string) {
	info, ids, err := inspectShard(fsy, filepath.Join(dir, filepath.FromSlash(s.File)))
	if err != nil {
		return nil, err.Error()
	}
	var diffs []string
	if info.Bytes != s.Bytes || info.XXHash64 != s.XXHash64 {
		diffs = append(diffs, fmt.Sprintf("%d bytes with xxhash64 %s, the manifest says %d bytes with %s", info.Bytes, info.XXHash64, s.Bytes, s.XXHash64))
	}
	if info.Rows != s.Rows || info.FirstID != s.FirstID || info.LastID != s.LastID {
		diffs = append(diffs, fmt.Sprintf("%d rows %s..%s, the manifest says %d rows %s..%s", info.Rows, info.FirstID, info.LastID, s.Rows, s.FirstID, s.LastID))
	}
	if s.IDsXXHash64 != "" {
		data, err := fsys.ReadFile(fsy, filepath.Join(dir, shardsDir, sidecarName(s.index())))
		var l idList
		if err == nil {
			l, err = decodeIDs(data)
		}
		switch {
		case err != nil:
			diffs = append(diffs, "id list: "+err.Error())
		case l.matches(s) != "":
			diffs = append(diffs, "id list: "+l.matches(s))
		case !slices.Equal(l.ids, ids):
			diffs = append(diffs, "id list: its ids differ from the shard's id column")
		}
	}
	return ids, strings.Join(diffs, "; ")
}
