package pipeline

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/schema"
)

// inputSpec is the job's input with what the style adds: whether the input
// holds documents (the grounded style) and how they are cut.
type inputSpec struct {
	Input
	docs documentInput
}

type documentInput struct {
	on            bool
	passageChars  int
	analysisChars int
}

// input is how the job's input is read.
func (j Job) input() inputSpec {
	return inputSpec{Input: j.Input, docs: documentInput{on: j.Style == schema.StyleGrounded, passageChars: j.Grounded.PassageChars, analysisChars: j.Grounded.AnalysisChars}}
}

// The kinds of input path.
const (
	inputJSONL   = "jsonl"
	inputParquet = "parquet"
	inputDir     = "directory"
	inputText    = "text" // one .txt or .md document
)

// docExtensions are the names of the files a document directory's documents
// are read from.
var docExtensions = []string{".txt", ".md"}

func isDocFile(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range docExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

// kindOf says how an input path is read: a documents job also reads
// directories and .txt/.md files.
func (in inputSpec) kindOf(path string) string {
	if in.docs.on {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			return inputDir
		}
		if in.Format == "auto" && isDocFile(path) {
			return inputText
		}
	}
	if formatOf(path, in.Format) == "parquet" {
		return inputParquet
	}
	return inputJSONL
}

// usableID: an id given by the input is short and printable.
func usableID(id string) bool {
	return len(id) <= maxIDLen && !strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// newDocument cuts one document row into its passages. The document's id is
// the row's id field, or its content hash when it has none.
func newDocument(vals map[string]string, in inputSpec) ([]Problem, string) {
	text := strings.TrimSpace(vals["text"])
	if text == "" {
		return nil, fmt.Sprintf("field %q is empty", in.Fields.Text)
	}
	for name, v := range vals {
		if !utf8.ValidString(v) {
			return nil, fmt.Sprintf("field %q is not valid UTF-8", name)
		}
	}
	id := strings.TrimSpace(vals["id"])
	if id == "" {
		id = ContentHash(text)
	} else if !usableID(id) {
		return nil, fmt.Sprintf("field %q must be at most %d printable characters", in.Fields.ID, maxIDLen)
	}
	source := strings.TrimSpace(vals["source"])
	if source == "" {
		source = in.Source
	}
	title := strings.TrimSpace(vals["title"])
	return withDocContext(passagesOf(id, title, source, text, in.docs.passageChars), title, text, in.docs.analysisChars), ""
}

// passagesOf cuts a document into its passage units.
func passagesOf(docID, title, source, text string, limit int) []Problem {
	cuts := CutPassages(text, limit)
	out := make([]Problem, len(cuts))
	for i, c := range cuts {
		out[i] = Problem{
			ID: schema.PassageRecordID(docID, int32(i)), Source: source, Text: c,
			DocID: docID, Title: title, PassageIndex: int32(i), DocHash: ContentHash(c),
		}
	}
	return out
}

// readDocDir reads every .txt and .md file under root (recursively, in
// lexical order, leaving out hidden files and directories) as a document
// whose id is its path relative to root, with / as separator.
func readDocDir(ctx context.Context, root string, in inputSpec, yield func(Problem) error, bad func(*InputError)) error {
	files, err := docFiles(root)
	if err != nil {
		return err
	}
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if err := readDocFile(path, filepath.ToSlash(rel), in, yield, bad); err != nil {
			return err
		}
	}
	return nil
}

// docFiles lists the document files under root in lexical order.
func docFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading input directory: %w", err)
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && isDocFile(path) {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// readDocFile reads one .txt or .md file as the document id. A Markdown
// file's first "# " heading is its title.
func readDocFile(path, id string, in inputSpec, yield func(Problem) error, bad func(*InputError)) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("opening input: %w", err)
	}
	if st.Size() > int64(in.MaxLineBytes) {
		bad(&InputError{path, 0, fmt.Sprintf("document larger than %d bytes (input.max_line_bytes)", in.MaxLineBytes)})
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("opening input: %w", err)
	}
	units, msg := docFileUnits(b, id, in)
	if msg != "" {
		bad(&InputError{path, 0, msg})
		return nil
	}
	for _, p := range units {
		p.File = path
		if err := yield(p); err != nil {
			return err
		}
	}
	return nil
}

// docFileUnits makes the passages of a document file's bytes, or says why
// it holds none.
func docFileUnits(b []byte, id string, in inputSpec) ([]Problem, string) {
	if kind := binaryKind(b[:min(len(b), 8)]); kind != "" || strings.IndexByte(string(b[:min(len(b), 8000)]), 0) >= 0 {
		if kind == "" {
			kind = "binary data"
		}
		return nil, fmt.Sprintf("holds %s, not text", kind)
	}
	if !utf8.Valid(b) {
		return nil, "not valid UTF-8 text"
	}
	text := strings.TrimSpace(string(b))
	if text == "" {
		return nil, "empty document"
	}
	if !usableID(id) {
		return nil, fmt.Sprintf("its path %q is not usable as a document id (at most %d printable characters)", id, maxIDLen)
	}
	title := ""
	if strings.EqualFold(filepath.Ext(id), ".md") {
		title = markdownTitle(text)
	}
	return withDocContext(passagesOf(id, title, in.Source, text, in.docs.passageChars), title, text, in.docs.analysisChars), ""
}

// markdownTitle is the text of the first level-1 heading, if any.
func markdownTitle(text string) string {
	for line := range strings.Lines(text) {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// checkDocDir refuses a documents directory that holds nothing usable,
// saying what it holds instead.
func checkDocDir(root string, in inputSpec) error {
	files, err := docFiles(root)
	if err != nil {
		return &UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
	}
	if len(files) == 0 {
		return &UsageError{Problems: []string{fmt.Sprintf("input %s holds no %s files (%s); the grounded style reads the documents of a directory from them, or JSONL/Parquet rows with a text field",
			root, strings.Join(docExtensions, " or "), describeDir(root))}}
	}
	firstReason := ""
	for i, path := range files {
		if i == firstLinesChecked {
			break
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return &UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
		}
		if _, msg := docFileUnits(b, "x", in); msg == "" {
			return nil
		} else if firstReason == "" {
			firstReason = path + ": " + msg
		}
	}
	return &UsageError{Problems: []string{fmt.Sprintf("input %s: none of its first %d document files holds usable text (%s)", root, min(len(files), firstLinesChecked), firstReason)}}
}

// describeDir says what a directory holds: its files counted by extension.
func describeDir(root string) string {
	byExt := map[string]int{}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			ext := strings.ToLower(filepath.Ext(path))
			if ext == "" {
				ext = "no extension"
			}
			byExt[ext]++
		}
		return nil
	})
	if len(byExt) == 0 {
		return "it holds no files"
	}
	var parts []string
	for _, ext := range sortedKeys(byExt) {
		parts = append(parts, fmt.Sprintf("%d %s", byExt[ext], ext))
	}
	return "it holds " + strings.Join(parts, ", ")
}

// countUnits counts the passages of a documents input by cutting it.
func countUnits(ctx context.Context, in inputSpec) (int64, error) {
	var n int64
	err := readUnits(ctx, in, func(Problem) error { n++; return nil }, func(*InputError) {})
	return n, err
}
