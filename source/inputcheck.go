package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/rubricforge/rubricforge/job"

	"github.com/parquet-go/parquet-go"
)

// firstLinesChecked is how many lines of each input file must not all be
// bad: an input that is entirely wrong (a wrong field mapping, compressed
// data, Parquet read as JSONL) stops the run before it starts.
const firstLinesChecked = 100

// CheckInputs makes sure, before the run directory is touched, that every
// input file exists and that its first lines hold problems. Its errors are
// *UsageError and say what the lines hold instead.
func CheckInputs(in Spec) error {
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
		var ue *job.UsageError
		switch {
		case errors.As(err, &ue):
			problems = append(problems, ue.Problems...)
		case err != nil:
			return err
		}
	}
	if len(problems) > 0 {
		return &job.UsageError{Problems: problems}
	}
	return nil
}

// checkFile reports a missing input or a directory as a usage error.
func checkFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &job.UsageError{Problems: []string{fmt.Sprintf("input.paths: %s does not exist", path)}}
	case err != nil:
		return &job.UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
	case st.IsDir():
		return &job.UsageError{Problems: []string{fmt.Sprintf("input.paths: %s is a directory; name the files (only the grounded style reads a directory of documents)", path)}}
	}
	return nil
}

func checkJSONL(path string, in Spec) error {
	if err := checkFile(path); err != nil {
		return err
	}
	f, err := openText(path)
	if err != nil {
		return &job.UsageError{Problems: []string{err.Error()}}
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	head, _ := r.Peek(8)
	if kind := binaryKind(head); kind != "" {
		return &job.UsageError{Problems: []string{fmt.Sprintf("input %s looks like %s, not JSONL text; %s", path, kind, binaryHint(kind))}}
	}
	s, err := surveyHead(r, in.MaxLineBytes, "input.max_line_bytes", func(raw []byte) string {
		_, msg := unitsFromJSON(raw, in)
		return msg
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if s.usable || s.lines == 0 {
		return nil // an empty file holds no problems, and that is all
	}
	return &job.UsageError{Problems: []string{fmt.Sprintf("input %s: none of its first %d lines holds a usable %s (%s); %s",
		path, s.lines, in.unitName(), s.firstReason, s.describe(in))}}
}

// checkDocText refuses a .txt or .md input that holds no usable text.
func checkDocText(path string, in Spec) error {
	if err := checkFile(path); err != nil {
		return err
	}
	b, msg, err := in.readChecked(path)
	if err != nil {
		return &job.UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
	}
	if msg == "" {
		_, msg = docFileUnits(b, filepath.Base(path), in)
	}
	if msg != "" {
		return &job.UsageError{Problems: []string{fmt.Sprintf("input %s: %s", path, msg)}}
	}
	return nil
}

// unitName is what one input row holds, for messages.
func (in Spec) unitName() string {
	if in.docs.on {
		return "document"
	}
	return "problem"
}

// lineSurvey collects what the bad first lines of a JSONL input hold.
type lineSurvey struct {
	lines, objects int
	usable         bool // a line held what the reader needs
	firstReason    string
	fields         map[string]bool
}

// surveyHead reads non-blank lines of r, at most maxLine bytes each (limit
// names that setting in messages), until one is usable (usable returns ""
// for it, else why not) or firstLinesChecked lines were read. It is the
// check of distill run's input and of distill verify's.
func surveyHead(r *bufio.Reader, maxLine int, limit string, usable func(raw []byte) string) (*lineSurvey, error) {
	s := &lineSurvey{}
	for line := 1; s.lines < firstLinesChecked; line++ {
		raw, tooLong, err := readLine(r, maxLine)
		if err != nil && err != io.EOF {
			return s, fmt.Errorf("line %d: %w", line, err)
		}
		if tooLong || len(bytes.TrimSpace(raw)) > 0 {
			if s.take(line, raw, tooLong, fmt.Sprintf("longer than %d bytes (%s)", maxLine, limit), usable) {
				s.usable = true
				return s, nil
			}
		}
		if err == io.EOF {
			break
		}
	}
	return s, nil
}

// take looks at one non-blank line; it reports whether the line is usable.
func (s *lineSurvey) take(line int, raw []byte, tooLong bool, tooLongMsg string, usable func([]byte) string) bool {
	s.lines++
	msg := tooLongMsg
	if !tooLong {
		if msg = usable(raw); msg == "" {
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

// fieldNames lists, quoted and sorted, the fields the surveyed lines have
// (the first dozen); "" when no line was a JSON object.
func (s *lineSurvey) fieldNames() string {
	names := slices.Sorted(maps.Keys(s.fields))
	const shown = 12
	more := ""
	if len(names) > shown {
		names, more = names[:shown], ", ..."
	}
	return quoteAll(names) + more
}

func (s *lineSurvey) describe(in Spec) string {
	if s.objects == 0 {
		return "the lines are not JSON objects, one per line"
	}
	if in.docs.on {
		return fmt.Sprintf("the lines have the fields %s, and input.fields maps the document's text to %q (set it with --field-text)",
			s.fieldNames(), in.Fields.Text)
	}
	return fmt.Sprintf("the lines have the fields %s, and input.fields maps the problem to %q and the answer to %q (set them with --field-problem and --field-answer)",
		s.fieldNames(), in.Fields.Problem, in.Fields.Answer)
}

// HeadProblem says why none of the first lines of a JSONL stream is
// usable, naming the fields they have; nil when one is, or there are none.
// r is read up to the first usable line, or its first 100 non-blank lines.
// usable returns "" for a usable line, else why it is not. distill verify
// checks its input with it as distill run checks its own.
func HeadProblem(r *bufio.Reader, maxLine int, usable func(raw []byte) string) (string, error) {
	s, err := surveyHead(r, maxLine, "--max-line-bytes", usable)
	if err != nil || s.usable || s.lines == 0 {
		return "", err
	}
	found := "the lines are not JSON objects, one per line"
	if s.objects > 0 {
		found = "the lines have the fields " + s.fieldNames()
	}
	return fmt.Sprintf("none of its first %d lines is usable (%s); %s", s.lines, s.firstReason, found), nil
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

func checkParquet(path string, in Spec) error {
	if err := checkFile(path); err != nil {
		return err
	}
	if _, compression := compressionOf(path); compression != "" {
		return &job.UsageError{Problems: []string{fmt.Sprintf("input %s: compressed Parquet files are not read; Parquet compresses its own pages, so decompress the file", path)}}
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
	return &job.UsageError{Problems: []string{fmt.Sprintf("input %s: none of its first %d rows holds a usable %s (%s)", path, rows, in.unitName(), firstReason)}}
}

// CountRows counts the rows of the input quickly, without parsing them:
// the non-blank lines of JSONL files, the footer's row count of Parquet
// files. It feeds the total and the ETA of a run from its start.
//
// A documents input counts its passages, which takes cutting it.
func CountRows(ctx context.Context, in Spec) (int64, error) {
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
	defer func() { _ = f.Close() }() // only read: closing loses nothing
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
	return countNonBlank(&ctxReader{ctx, f})
}

// countNonBlank counts the lines of r that are not blank.
func countNonBlank(r io.Reader) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	blank := true
	for {
		k, err := r.Read(buf)
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
