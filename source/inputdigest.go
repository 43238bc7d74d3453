package source

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/corpus"
)

// What a run read is recorded in its manifest (corpus.InputFile): every
// input file's size, xxhash64 of its bytes and its rows. A resume compares
// the files it is given with them before it sends anything, and a merge
// compares its workers', so a corpus is never built from, or merged
// across, inputs that differ while the job's settings (which name the
// input, not its content) are the same. The digest is taken in the pass
// that counts the input's rows up front, which every session makes anyway
// for its ETA; a Parquet file, whose rows its footer gives, is read once
// more for it.
//
// A file that only grew (its old bytes are the start of the new ones: rows
// appended) resumes, and its new rows are new work. Any other difference
// (a changed row, a file removed, fewer rows) is refused unless --force,
// or the directory holds no records yet.

// Digest reads the input files of in: their digests, and for each
// file that prev (the last session's record, matched by position) holds,
// whether its old bytes are the start of the file now (prefix).
type Digest struct {
	Files  []corpus.InputFile // each input file's size, hash and rows
	prefix []bool
}

// DigestInputs reads every input file once, hashing its bytes and
// counting its rows.
func DigestInputs(ctx context.Context, in Spec, prev []corpus.InputFile) (Digest, error) {
	var paths []string
	for _, p := range in.Paths {
		if in.kindOf(p) != inputDir {
			paths = append(paths, p)
			continue
		}
		files, err := docFiles(p)
		if err != nil {
			return Digest{}, err
		}
		paths = append(paths, files...)
	}
	var d Digest
	for i, path := range paths {
		at := int64(-1)
		if i < len(prev) {
			at = prev[i].Bytes
		}
		f, prefix, err := digestFile(ctx, path, in, at)
		if err != nil {
			return Digest{}, fmt.Errorf("reading input %s for its digest: %w", path, err)
		}
		if i < len(prev) {
			d.prefix = append(d.prefix, prefix == prev[i].XXHash64)
		}
		d.Files = append(d.Files, f)
	}
	return d, nil
}

// digestFile hashes the bytes of path and counts its rows; prefix is the
// hash of its first at bytes ("" when it is shorter, or at < 0).
func digestFile(ctx context.Context, path string, in Spec, at int64) (corpus.InputFile, string, error) {
	out := corpus.InputFile{Path: path}
	f, err := os.Open(path)
	if err != nil {
		return out, "", err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	h := &prefixHash{d: xxhash.New(), at: at}
	src := io.TeeReader(&ctxReader{ctx, f}, h)
	switch in.kindOf(path) {
	case inputText:
		out.Rows = 1
	case inputParquet:
		if out.Rows, err = parquetRows(path); err != nil {
			return out, "", err
		}
	default:
		if out.Rows, err = countLinesIn(path, src); err != nil {
			return out, "", err
		}
	}
	if _, err := io.Copy(io.Discard, src); err != nil { // what a decompressor left unread
		return out, "", err
	}
	out.Bytes, out.XXHash64 = h.n, fmt.Sprintf("%016x", h.d.Sum64())
	if h.done || h.at == h.n {
		return out, h.prefix(), nil
	}
	return out, "", nil
}

// countLinesIn counts the non-blank lines of the JSONL file read from src,
// decompressed when its name says so.
func countLinesIn(path string, src io.Reader) (int64, error) {
	r, err := decompress(path, src)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return countNonBlank(r)
}

// prefixHash is an xxhash64 of a stream that also keeps the hash of the
// stream's first at bytes.
type prefixHash struct {
	d      *xxhash.Digest
	n, at  int64
	done   bool
	atHash uint64
}

func (h *prefixHash) Write(p []byte) (int, error) {
	if !h.done && h.at >= 0 && h.n+int64(len(p)) >= h.at {
		k := h.at - h.n
		h.d.Write(p[:k])
		h.atHash, h.done = h.d.Sum64(), true
		h.d.Write(p[k:])
	} else {
		h.d.Write(p)
	}
	h.n += int64(len(p))
	return len(p), nil
}

func (h *prefixHash) prefix() string {
	if !h.done {
		return fmt.Sprintf("%016x", h.d.Sum64())
	}
	return fmt.Sprintf("%016x", h.atHash)
}

// ctxReader stops a read when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Changes lists how the input now differs from prev (the record of
// the run directory, made from dir), one line per file; grew lists the
// files that only had bytes appended.
func Changes(prev []corpus.InputFile, now Digest) (changes, grew []string) {
	for i, p := range prev {
		if i >= len(now.Files) {
			changes = append(changes, fmt.Sprintf("input file %d (%s) is not read any more", i+1, DescribeInput(p)))
			continue
		}
		c := now.Files[i]
		switch {
		case c.XXHash64 == p.XXHash64 && c.Bytes == p.Bytes:
		case c.Bytes > p.Bytes && now.prefix[i]:
			grew = append(grew, fmt.Sprintf("%s: %d rows, now %d", c.Path, p.Rows, c.Rows))
		default:
			changes = append(changes, fmt.Sprintf("%s, now %s", DescribeInput(p), DescribeInput(c)))
		}
	}
	for _, c := range now.Files[min(len(prev), len(now.Files)):] {
		grew = append(grew, fmt.Sprintf("%s is new: %d rows", c.Path, c.Rows))
	}
	return changes, grew
}

// DescribeInput names a file as a message shows it.
func DescribeInput(f corpus.InputFile) string {
	return fmt.Sprintf("%s (%d rows, %d bytes, xxhash64 %s)", f.Path, f.Rows, f.Bytes, f.XXHash64)
}
