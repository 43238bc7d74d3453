package pipeline

import "path/filepath"

// The files of a run directory that pipeline reads and writes itself; the
// shards, the manifest, failures.jsonl and LOCK are corpus's.
// TODO(integration): ask corpus, which owns the run directory's layout.
const (
	jobFileName    = "job.yaml"
	reportFileName = "report.json"
	cacheFileName  = "cache.db"
)

func jobPath(dir string) string          { return filepath.Join(dir, jobFileName) }
func reportPath(dir string) string       { return filepath.Join(dir, reportFileName) }
func defaultCachePath(dir string) string { return filepath.Join(dir, cacheFileName) }
