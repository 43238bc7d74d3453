package pipeline

import "github.com/rubricforge/rubricforge/internal/fsys"

// RunFS is the file system of the run directory's files (the corpus, the
// response cache, job.yaml and report.json): fsys.OS unless a test set
// another. The input files and prompt templates are always read from the OS.
func (o Options) RunFS() fsys.FS {
	if o.fs != nil {
		return o.fs
	}
	return fsys.OS
}
