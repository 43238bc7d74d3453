package corpus

import (
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// The readers of a run directory on any fsys.FS, for the packages of this
// module that run a whole job on a test file system (ReadAll, Verify and
// ReadManifest are these on fsys.OS).

// ReadAllFS is ReadAll on fsy.
func ReadAllFS(fsy fsys.FS, dir string, fn func(*schema.Record) error) error {
	return readAllFS(fsy, dir, fn)
}

// VerifyFS is Verify on fsy.
func VerifyFS(fsy fsys.FS, dir string) (Verification, error) { return verify(fsy, dir) }

// ReadManifestFS is ReadManifest on fsy.
func ReadManifestFS(fsy fsys.FS, dir string) (Manifest, error) { return readManifest(fsy, dir) }
