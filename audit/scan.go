package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// maxLineBytes bounds one JSONL record; real ones are tens of KiB.
const maxLineBytes = 64 << 20

// scanFile streams the rows of f, in the input's format, to fn as T.
// ofLabel converts a verl label (and the row's split) to T. A line or row that does not decode is
// passed to bad and skipped; an unreadable file is the returned error. rows
// counts the rows found, bad ones included.
func scanFile[T any](f File, format string, ofLabel func(*schema.Label, string) T, fn func(*T, int64) error, bad func(Problem)) (rows int64, err error) {
	switch {
	case f.JSONL:
		return scanJSONL(f.Path, fn, bad)
	case format == FormatVerl:
		err = corpus.Scan(f.Path, func(lr *labelRow) error {
			rows++
			l, err := schema.ParseLabel([]byte(lr.Label))
			if err != nil && l.ID == "" && len(l.Rubric) == 0 {
				bad(Problem{File: f.Path, Line: rows, Error: fmt.Sprintf("label does not decode: %v", err)})
				return nil
			}
			t := ofLabel(&l, lr.ExtraInfo.Split)
			return fn(&t, rows)
		})
		return rows, err
	case f.snap != nil:
		err = corpus.ScanSnapshot(f.snap, f.index, func(t *T) error {
			rows++
			return fn(t, rows)
		})
		return rows, err
	default:
		err = corpus.Scan(f.Path, func(t *T) error {
			rows++
			return fn(t, rows)
		})
		return rows, err
	}
}

// scanJSONL decodes each non-blank line of path as T.
func scanJSONL[T any](path string, fn func(*T, int64) error, bad func(Problem)) (rows int64, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer func() { _ = fh.Close() }() // only read: closing loses nothing
	br := bufio.NewReaderSize(fh, 1<<20)
	var line int64
	for {
		data, rerr := readLine(br)
		line++
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			if errors.Is(rerr, errLineTooLong) {
				rows++
				bad(Problem{File: path, Line: line, Error: rerr.Error()})
				continue
			}
			return rows, fmt.Errorf("reading %s at line %d: %w", path, line, rerr)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			rows++
			var t T
			if err := json.Unmarshal(data, &t); err != nil {
				msg := fmt.Sprintf("not a JSON record: %v", err)
				if errors.Is(rerr, io.EOF) {
					msg += " (the last line has no newline: was the file cut short?)"
				}
				bad(Problem{File: path, Line: line, Error: msg})
			} else if err := fn(&t, rows); err != nil {
				return rows, err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return rows, nil
		}
	}
}

var errLineTooLong = fmt.Errorf("line longer than %d MiB", maxLineBytes>>20)

// readLine returns the next line without its newline. A line longer than
// maxLineBytes is skipped whole and reported as errLineTooLong; io.EOF comes
// with the last line when it has no newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLineBytes {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, chunk...)
			continue
		case err == nil:
			if buf == nil {
				return chunk[:len(chunk)-1], nil
			}
			return append(buf, chunk[:len(chunk)-1]...), nil
		default:
			return append(buf, chunk...), err
		}
	}
}
