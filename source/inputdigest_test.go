package source

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/cespare/xxhash/v2"
)

// TestDigestFile: the digest is of the file's bytes (compressed ones as
// stored), rows are its non-blank lines decompressed, and the prefix hash
// is of its first at bytes, "" when it is shorter.
func TestDigestFile(t *testing.T) {
	dir := t.TempDir()
	text := "{\"a\":1}\n\n{\"a\":2}\n{\"a\":3}"
	plain := filepath.Join(dir, "in.jsonl")
	os.WriteFile(plain, []byte(text), 0o644)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	packed := filepath.Join(dir, "in.jsonl.gz")
	os.WriteFile(packed, gz.Bytes(), 0o644)
	hash := func(b []byte) string { return fmt.Sprintf("%016x", xxhash.Sum64(b)) }
	in := Spec{Input: job.Input{Format: "auto"}}
	for _, tc := range []struct {
		name, path string
		bytes      []byte
		at         int64
	}{
		{"plain", plain, []byte(text), -1},
		{"plain, a prefix", plain, []byte(text), 8},
		{"plain, the whole file as the prefix", plain, []byte(text), int64(len(text))},
		{"plain, shorter than the prefix", plain, []byte(text), int64(len(text)) + 1},
		{"gzip", packed, gz.Bytes(), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, prefix, err := digestFile(t.Context(), tc.path, in, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if f.Rows != 3 || f.Bytes != int64(len(tc.bytes)) || f.XXHash64 != hash(tc.bytes) {
				t.Errorf("digest %+v, want 3 rows, %d bytes, %s", f, len(tc.bytes), hash(tc.bytes))
			}
			want := ""
			if tc.at >= 0 && tc.at <= int64(len(tc.bytes)) {
				want = hash(tc.bytes[:tc.at])
			}
			if prefix != want {
				t.Errorf("prefix %q, want %q", prefix, want)
			}
		})
	}
}
