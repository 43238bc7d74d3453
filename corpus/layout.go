package corpus

import "path/filepath"

// The names inside a run directory. corpus owns this layout; other packages
// ask Layout for a path instead of spelling a name.
const (
	JobName      = "job.yaml"       // the normalized job as run (no secrets)
	ManifestName = "manifest.json"  // the committed shards and the job history
	ReportName   = "report.json"    // counts, cost and timings of the run so far
	FailuresName = "failures.jsonl" // one line per problem that did not make it
	CacheName    = "cache.db"       // the response cache
	LockName     = "LOCK"           // held by the process running the directory
	ShardsDir    = "shards"         // part-NNNNN.parquet and their .ids lists
)

// shardsDir and brokenDir: where shards live, and where the resume scan
// moves the ones it cannot use.
const (
	shardsDir = ShardsDir
	brokenDir = "broken"
)

// Layout gives the paths of a run directory's files.
type Layout struct{ Dir string }

// Job is the path of job.yaml.
func (l Layout) Job() string { return filepath.Join(l.Dir, JobName) }

// Manifest is the path of manifest.json.
func (l Layout) Manifest() string { return filepath.Join(l.Dir, ManifestName) }

// Report is the path of report.json.
func (l Layout) Report() string { return filepath.Join(l.Dir, ReportName) }

// Failures is the path of failures.jsonl.
func (l Layout) Failures() string { return filepath.Join(l.Dir, FailuresName) }

// Cache is the path of the run's own response cache.
func (l Layout) Cache() string { return filepath.Join(l.Dir, CacheName) }

// Lock is the path of the LOCK file.
func (l Layout) Lock() string { return filepath.Join(l.Dir, LockName) }

// Shards is the path of the shard directory.
func (l Layout) Shards() string { return filepath.Join(l.Dir, ShardsDir) }
