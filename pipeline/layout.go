package pipeline

import "github.com/rubricforge/rubricforge/corpus"

// The files of a run directory that pipeline reads and writes itself; corpus
// owns the layout (the shards, the manifest, failures.jsonl and LOCK are its
// own files).
func jobPath(dir string) string          { return corpus.Layout{Dir: dir}.Job() }
func reportPath(dir string) string       { return corpus.Layout{Dir: dir}.Report() }
func defaultCachePath(dir string) string { return corpus.Layout{Dir: dir}.Cache() }
