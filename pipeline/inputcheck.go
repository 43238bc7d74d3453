package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/parquet-go/parquet-go"
)

// firstLinesChecked is how many lines of each input file must not all be
// bad: an input that is entirely wrong (a wrong field mapping, compressed
// data, Parquet read as JSONL) stops the run before it starts.
const firstLinesChecked = 100

// checkInputs makes sure, before the run directory is touched, that every
// input file exists and that its first lines hold problems. Its errors are
// *UsageError and say what the lines hold instead.
func checkInputs(in inputSpec) error {
	var problems []string
	for _, path := range in.Paths {
		var err error
		switch in.kindOf(path) {
		case inputDir:
			err = checkDocDir(path, in)
		case inputText:
			err = checkDocText(path, in)
		case inputParquet:
			err = checkParquet(path, in)
		default:
			err = checkJSONL(path, in)
		}
		var ue *UsageError
		switch {
		case errors.As(err, &ue):
			problems = append(problems, ue.Problems...)
		case err != nil:
			return err
		}
	}
	if len(problems) > 0 {
		return &UsageError{Problems: problems}
	}
	return nil
}

// checkFile reports a missing input or a directory as a usage error.
func checkFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &UsageError{Problems: []string{fmt.Sprintf("input.paths: %s does not exist", path)}}
	case err != nil:
		return &UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
	case st.IsDir():
		return &UsageError{Problems: []string{fmt.Sprintf("input.paths: %s is a directory; name the files (only the grounded style reads a directory of documents)", path)}}
	}
	return nil
}

func checkJSONL(path string, in inputSpec) error {
	if err := checkFile(path); err != nil {
		return err
	}
	f, err := openText(path)
	if err != nil {
		return &UsageError{Problems: []string{err.Error()}}
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	head, _ := r.Peek(8)
	if kind := binaryKind(head); kind != "" {
		return &UsageError{Problems: []string{fmt.Sprintf("input %s looks like %s, not JSONL text; %s", path, kind, binaryHint(kind))}}
	}
	var s lineSurvey
	for line := 1; s.lines < firstLinesChecked; line++ {
		raw, tooLong, err := readLine(r, in.MaxLineBytes)
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading %s line %d: %w", path, line, err)
		}
		if tooLong || len(bytes.TrimSpace(raw)) > 0 {
			if s.take(line, raw, tooLong, in) {
				return nil
			}
		}
		if err == io.EOF {
			break
		}
	}
	if s.lines == 0 {
		return nil // an empty file holds no problems, and that is all
	}
	return &UsageError{Problems: []string{fmt.Sprintf("input %s: none of its first %d lines holds a usable %s (%s); %s",
		path, s.lines, in.unitName(), s.firstReason, s.describe(in))}}
}

// checkDocText refuses a .txt or .md input that holds no usable text.
func checkDocText(path string, in inputSpec) error {
	if err := checkFile(path); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return &UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
	}
	if _, msg := docFileUnits(b, filepath.Base(path), in); msg != "" {
		return &UsageError{Problems: []string{fmt.Sprintf("input %s: %s", path, msg)}}
	}
	return nil
}

// unitName is what one input row holds, for messages.
func (in inputSpec) unitName() string {
	if in.docs.on {
		return "document"
	}
	return "problem"
}

// lineSurvey collects what the bad first lines of a JSONL input hold.
type lineSurvey struct {
	lines, objects int
	firstReason    string
	fields         map[string]bool
}

// take looks at one non-blank line; it reports whether the line holds a problem.
func (s *lineSurvey) take(line int, raw []byte, tooLong bool, in inputSpec) bool {
	s.lines++
	msg := fmt.Sprintf("longer than %d bytes (input.max_line_bytes)", in.MaxLineBytes)
	if !tooLong {
		if _, msg = unitsFromJSON(raw, in); msg == "" {
			return true
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			s.objects++
			if s.fields == nil {
				s.fields = map[string]bool{}
			}
			for k := range obj {
				s.fields[k] = true
			}
		}
	}
	if s.firstReason == "" {
		s.firstReason = fmt.Sprintf("line %d: %s", line, msg)
	}
	return false
}

func (s *lineSurvey) describe(in inputSpec) string {
	if s.objects == 0 {
		return "the lines are not JSON objects, one per line"
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range s.fields {
			if !yield(k) {
				return
			}
		}
	})
	const shown = 12
	more := ""
	if len(names) > shown {
		names, more = names[:shown], ", ..."
	}
	if in.docs.on {
		return fmt.Sprintf("the lines have the fields %s%s, and input.fields maps the document's text to %q (set it with --field-text)",
			quoteAll(names), more, in.Fields.Text)
	}
	return fmt.Sprintf("the lines have the fields %s%s, and input.fields maps the problem to %q and the answer to %q (set them with --field-problem and --field-answer)",
		quoteAll(names), more, in.Fields.Problem, in.Fields.Answer)
}

// binaryKind names the data format that a file's first bytes announce.
func binaryKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "gzip"
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "zstd"
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "Parquet"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return "a zip archive"
	}
	return ""
}

func binaryHint(kind string) string {
	switch kind {
	case "gzip":
		return "name it with .gz at the end (e.g. problems.jsonl.gz) to have it read compressed"
	case "zstd":
		return "name it with .zst at the end (e.g. problems.jsonl.zst) to have it read compressed"
	case "Parquet":
		return "name it with .parquet at the end, or set input.format: parquet (--input-format parquet)"
	}
	return "unpack it first"
}

func checkParquet(path string, in inputSpec) error {
	if err := checkFile(path); err != nil {
		return err
	}
	if _, compression := compressionOf(path); compression != "" {
		return &UsageError{Problems: []string{fmt.Sprintf("input %s: compressed Parquet files are not read; Parquet compresses its own pages, so decompress the file", path)}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errFound := errors.New("found a problem")
	rows, firstReason := 0, ""
	err := readParquet(ctx, path, in, func(Problem) error { return errFound }, func(e *InputError) {
		if rows++; firstReason == "" {
			firstReason = fmt.Sprintf("row %d: %s", e.Line, e.Reason)
		}
		if rows >= firstLinesChecked {
			cancel()
		}
	})
	switch {
	case errors.Is(err, errFound) || (err == nil && rows == 0):
		return nil
	case err != nil && !errors.Is(err, context.Canceled):
		return err
	}
	return &UsageError{Problems: []string{fmt.Sprintf("input %s: none of its first %d rows holds a usable %s (%s)", path, rows, in.unitName(), firstReason)}}
}

// countRows counts the rows of the input quickly, without parsing them:
// the non-blank lines of JSONL files, the footer's row count of Parquet
// files. It feeds the total and the ETA of a run from its start.
//
// A documents input counts its passages, which takes cutting it.
func countRows(ctx context.Context, in inputSpec) (int64, error) {
	if in.docs.on {
		return countUnits(ctx, in)
	}
	var total int64
	for _, path := range in.Paths {
		var n int64
		var err error
		if formatOf(path, in.Format) == "parquet" {
			n, err = parquetRows(path)
		} else {
			n, err = countLines(ctx, path)
		}
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func parquetRows(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return 0, err
	}
	return pf.NumRows(), nil
}

// countLines counts the lines of a JSONL file that are not blank.
func countLines(ctx context.Context, path string) (int64, error) {
	f, err := openText(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	blank := true
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k, err := f.Read(buf)
		for _, b := range buf[:k] {
			switch {
			case b == '\n':
				if !blank {
					n++
				}
				blank = true
			case b != ' ' && b != '\t' && b != '\r':
				blank = false
			}
		}
		if err == io.EOF {
			if !blank {
				n++
			}
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
