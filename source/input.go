package source

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/internal/jsonscan"
	"github.com/rubricforge/rubricforge/job"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// Problem is one unit of work, ready for the stages: an input problem (the
// math styles) or a passage of a document (the grounded style, where Text is
// the passage, Answer is empty and the Doc fields are set).
type Problem struct {
	ID        string
	Source    string
	Text      string
	Answer    string
	Reference string // empty when the input has none
	File      string
	Line      int // 1-based line (JSONL) or row (Parquet); 0 for a whole file

	// A passage's document: its id, title, the passage's index in it from 0,
	// the number of passages it was cut into, and the passage's content hash
	// (ContentHash).
	DocID, Title               string
	PassageIndex, PassageCount int32
	DocHash                    string
	// DuplicateOf is the document that has this passage's document's text
	// and comes first in input order; nil when there is none. The run
	// leaves such a document out and reports it.
	DuplicateOf *DocumentRef
	// Doc is the document's context for its analysis (shared by its
	// passages) and Section the passage's heading path ("Chapter >
	// Section"; see withDocContext).
	Doc     *docContext
	Section string
	// LeaveOut says why a passage is left out before any request, when it
	// is: no text (a data-URI image, base64 data) or one word longer than
	// a passage may be.
	LeaveOut string

	docDigest uint64 // xxhash64 of the document's text, to tell duplicates
}

// InputError is one input line that could not be used. It names the file and
// line; the run skips the line and goes on.
type InputError struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

func (e *InputError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
}

// maxIDLen bounds a user-supplied id.
const maxIDLen = 128

// ReadProblems streams every problem of the input files to yield, in order.
// JSONL files named .gz or .zst are decompressed. Bad lines go to bad; they
// do not stop the reading. Only an unreadable file or a failing yield stops
// it.
func ReadProblems(ctx context.Context, in job.Input, yield func(Problem) error, bad func(*InputError)) error {
	return ReadUnits(ctx, Spec{Input: in}, yield, bad)
}

// ReadUnits is ReadProblems over an input of problems or documents. In a
// documents input (the grounded style) every row is a document, and a
// directory or a .txt/.md file holds documents too; each document is cut
// into passages (cutPassages), which are yielded in order as the units,
// those of a duplicate document marked (Problem.DuplicateOf).
func ReadUnits(ctx context.Context, in Spec, yield func(Problem) error, bad func(*InputError)) error {
	yield = in.markDuplicates(yield)
	for _, path := range in.Paths {
		var err error
		switch in.kindOf(path) {
		case inputDir:
			err = readDocDir(ctx, path, in, yield, bad)
		case inputText:
			err = readDocFile(path, filepath.ToSlash(filepath.Clean(path)), in, yield, bad)
		case inputParquet:
			err = readParquet(ctx, path, in, yield, bad)
		default:
			err = readJSONL(ctx, path, in, yield, bad)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// formatOf is the format of an input file: the job's input.format, or by
// its name when that is auto.
func formatOf(path, format string) string {
	if format != "auto" && format != "" {
		return format
	}
	name, _ := compressionOf(path)
	if strings.EqualFold(filepath.Ext(name), ".parquet") {
		return "parquet"
	}
	return "jsonl"
}

// compressionOf splits a compression suffix (.gz, .zst, .zstd) off a file
// name: "a.jsonl.gz" is "a.jsonl", "gzip".
func compressionOf(path string) (name, compression string) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".gz":
		return strings.TrimSuffix(path, filepath.Ext(path)), "gzip"
	case ".zst", ".zstd":
		return strings.TrimSuffix(path, filepath.Ext(path)), "zstd"
	}
	return path, ""
}

// openText opens a text input, decompressing it when its name says so.
func openText(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening input: %w", err)
	}
	r, err := decompress(path, bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		_ = f.Close() // only read
		return nil, err
	}
	return both{r, f}, nil
}

// decompress reads the text input named path from src, decompressed when
// its name says so. Closing it does not close src.
func decompress(path string, src io.Reader) (io.ReadCloser, error) {
	_, compression := compressionOf(path)
	switch compression {
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("input %s is not readable %s data: %w", path, compression, err)
		}
		return zr, nil
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("input %s is not readable %s data: %w", path, compression, err)
		}
		return zr.IOReadCloser(), nil
	}
	return io.NopCloser(src), nil
}

// both closes a decompressor and the file under it.
type both struct {
	io.ReadCloser
	file io.Closer
}

func (b both) Close() error {
	err := b.ReadCloser.Close()
	if ferr := b.file.Close(); err == nil {
		err = ferr
	}
	return err
}

func readJSONL(ctx context.Context, path string, in Spec, yield func(Problem) error, bad func(*InputError)) error {
	f, err := openText(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, tooLong, err := readLine(r, in.MaxLineBytes)
		if err == io.EOF && len(raw) == 0 && !tooLong {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading %s line %d: %w", path, line, err)
		}
		if tooLong {
			bad(&InputError{path, line, fmt.Sprintf("line longer than %d bytes (input.max_line_bytes)", in.MaxLineBytes)})
			continue
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			if err == io.EOF {
				return nil
			}
			continue
		}
		units, perr := unitsFromJSON(raw, in)
		if perr != "" {
			bad(&InputError{path, line, perr})
		}
		for _, p := range units {
			p.File, p.Line = path, line
			if yerr := yield(p); yerr != nil {
				return yerr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// readLine reads one line without its newline. A line longer than limit is
// consumed and reported as tooLong, without holding it in memory.
func readLine(r *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if !tooLong {
			if len(buf)+len(chunk) > limit {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err != nil {
			return buf, tooLong, err
		}
		if !isPrefix {
			return buf, tooLong, nil
		}
	}
}

// problemFromJSON reads one JSONL line of problems.
func problemFromJSON(raw []byte, in Spec) (Problem, string) {
	vals, msg := jsonValues(raw, in)
	if msg != "" {
		return Problem{}, msg
	}
	return newProblem(vals, in)
}

// unitsFromJSON reads one JSONL line into its units: one problem, or the
// passages of one document.
func unitsFromJSON(raw []byte, in Spec) ([]Problem, string) {
	vals, msg := jsonValues(raw, in)
	if msg != "" {
		return nil, msg
	}
	return in.units(vals)
}

// jsonValues reads the mapped fields of one JSONL line as text. A valid
// object is walked once (jsonscan); anything else goes to encoding/json,
// whose error the message carries.
func jsonValues(raw []byte, in Spec) (map[string]string, string) {
	if !utf8.Valid(raw) {
		return nil, "not valid UTF-8"
	}
	fields := in.fieldList()
	found := make([][]byte, len(fields)) // each field's value as written; the last one of a repeated key
	if !jsonscan.Valid(raw) || jsonscan.EachMember(raw, func(key string, val []byte) error {
		for i, fd := range fields {
			if fd.name != "" && key == fd.name {
				found[i] = val
			}
		}
		return nil
	}) != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, "not a JSON object: " + err.Error()
		}
		for i, fd := range fields {
			found[i] = obj[fd.name]
		}
	}
	vals := make(map[string]string, len(fields))
	for i, fd := range fields {
		v, msg := fieldText(fd, found[i])
		if msg != "" {
			return nil, msg
		}
		vals[fd.key] = v
	}
	return vals, ""
}

// fieldText is one mapped field's value (v, as written in the line) as
// text: a string, or a number as written; null or absent is "".
func fieldText(fd fieldSpec, v []byte) (string, string) {
	if fd.name == "" {
		return "", ""
	}
	if v == nil || string(v) == "null" {
		if fd.required {
			return "", fmt.Sprintf("missing field %q", fd.name)
		}
		return "", ""
	}
	if v[0] == '"' {
		if s, ok := jsonscan.Unquote(v); ok {
			return s, ""
		}
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		return "", fmt.Sprintf("field %q is not a string or number", fd.name)
	}
	if fd.textOnly {
		return "", fmt.Sprintf("field %q is a number (%s), not a document's text", fd.name, n.String())
	}
	return n.String(), ""
}

// units makes the units of one input row: one problem, or the passages of
// one document.
func (in Spec) units(vals map[string]string) ([]Problem, string) {
	if in.docs.on {
		return newDocument(vals, in)
	}
	p, msg := newProblem(vals, in)
	if msg != "" {
		return nil, msg
	}
	return []Problem{p}, ""
}

// fieldSpec is one mapped input field: the record's key, the input's name
// for it, and whether a row must have it.
type fieldSpec struct {
	key, name string
	required  bool
	textOnly  bool // a string only: a number is refused (a document's text)
}

// fieldList is the mapped fields of the input: a problem's or a document's.
func (in Spec) fieldList() []fieldSpec {
	f := in.Fields
	if in.docs.on {
		return []fieldSpec{{"text", f.Text, true, true}, {"id", f.ID, false, false}, {"title", f.Title, false, false}, {"source", f.Source, false, false}}
	}
	return []fieldSpec{{"problem", f.Problem, true, false}, {"answer", f.Answer, true, false}, {"id", f.ID, false, false}, {"source", f.Source, false, false}, {"reference", f.Reference, false, false}}
}

func newProblem(vals map[string]string, in Spec) (Problem, string) {
	p := Problem{
		Text:      strings.TrimSpace(vals["problem"]),
		Answer:    strings.TrimSpace(vals["answer"]),
		Source:    strings.TrimSpace(vals["source"]),
		Reference: strings.TrimSpace(vals["reference"]),
	}
	if p.Text == "" {
		return p, fmt.Sprintf("field %q is empty", in.Fields.Problem)
	}
	if p.Answer == "" {
		return p, fmt.Sprintf("field %q is empty", in.Fields.Answer)
	}
	for name, v := range vals {
		if !utf8.ValidString(v) {
			return p, fmt.Sprintf("field %q is not valid UTF-8", name)
		}
	}
	if p.Source == "" {
		p.Source = in.Source
	}
	if id := strings.TrimSpace(vals["id"]); id != "" {
		if !usableID(id) {
			return p, fmt.Sprintf("field %q must be at most %d printable characters", in.Fields.ID, maxIDLen)
		}
		p.ID = id
	} else {
		p.ID = job.ProblemID(p.Text, p.Answer)
	}
	return p, ""
}

func readParquet(ctx context.Context, path string, in Spec, yield func(Problem) error, bad func(*InputError)) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening input: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("opening input: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return &job.UsageError{Problems: []string{fmt.Sprintf("input %s is not a readable Parquet file: %v", path, err)}}
	}
	cols, err := parquetColumns(pf, path, in)
	if err != nil {
		return err
	}
	r := parquet.NewReader(pf)
	defer func() { _ = r.Close() }() // only read: closing loses nothing
	rows := make([]parquet.Row, 256)
	line := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := r.ReadRows(rows)
		for _, row := range rows[:n] {
			line++
			vals := rowValues(row, cols)
			size := 0
			for _, v := range vals {
				size += len(v)
			}
			if size > in.MaxLineBytes {
				bad(&InputError{path, line, fmt.Sprintf("row larger than %d bytes (input.max_line_bytes)", in.MaxLineBytes)})
				continue
			}
			units, msg := in.units(vals)
			if msg != "" {
				bad(&InputError{path, line, msg})
				continue
			}
			for _, p := range units {
				p.File, p.Line = path, line
				if err := yield(p); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("reading %s row %d: %w", path, line+1, rerr)
		}
	}
}

// rowValues reads the mapped columns of one Parquet row as text.
func rowValues(row parquet.Row, cols map[string]int) map[string]string {
	vals := map[string]string{}
	for key, idx := range cols {
		for _, v := range row {
			if v.Column() != idx || v.IsNull() {
				continue
			}
			switch v.Kind() {
			case parquet.ByteArray:
				vals[key] = string(v.ByteArray())
			case parquet.Int32:
				vals[key] = fmt.Sprint(v.Int32())
			default:
				vals[key] = fmt.Sprint(v.Int64())
			}
			break
		}
	}
	return vals
}

// parquetColumns finds the leaf columns of the mapped input fields.
func parquetColumns(pf *parquet.File, path string, in Spec) (map[string]int, error) {
	cols := map[string]int{}
	var problems []string
	for _, fd := range in.fieldList() {
		key, name := fd.key, fd.name
		if name == "" {
			continue
		}
		leaf, ok := pf.Schema().Lookup(name)
		switch {
		case !ok && fd.required:
			problems = append(problems, fmt.Sprintf("input %s has no column %q (input.fields.%s); its columns are %s", path, name, key, quoteAll(columnNames(pf))))
		case !ok:
		case !leaf.Node.Leaf():
			problems = append(problems, fmt.Sprintf("input %s column %q (input.fields.%s) is not a string or integer column", path, name, key))
		default:
			switch kind := leaf.Node.Type().Kind(); {
			case fd.textOnly && kind != parquet.ByteArray:
				problems = append(problems, fmt.Sprintf("input %s column %q (input.fields.%s) is not a string column: a document's text is a string", path, name, key))
			case kind == parquet.ByteArray || kind == parquet.Int64 || kind == parquet.Int32:
				cols[key] = leaf.ColumnIndex
			default:
				problems = append(problems, fmt.Sprintf("input %s column %q (input.fields.%s) is not a string or integer column", path, name, key))
			}
		}
	}
	if len(problems) > 0 {
		return nil, &job.UsageError{Problems: problems}
	}
	return cols, nil
}

func columnNames(pf *parquet.File) []string {
	var out []string
	for _, path := range pf.Schema().Columns() {
		out = append(out, strings.Join(path, "."))
	}
	return out
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
