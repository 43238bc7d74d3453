package source

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/job"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/schema"
)

// Spec is the job's input with what the style adds: whether the input
// holds documents (the grounded style) and how they are cut.
type Spec struct {
	job.Input
	docs documentInput
}

type documentInput struct {
	on            bool
	cut           CutOptions
	analysisChars int
}

// SpecOf is how the job's input is read.
func SpecOf(j *job.Job) Spec {
	g := j.Grounded
	return Spec{Input: j.Input, docs: documentInput{on: j.Style == schema.StyleGrounded, cut: CutOptionsOf(g), analysisChars: g.AnalysisChars}}
}

// The kinds of input path.
const (
	inputJSONL   = "jsonl"
	inputParquet = "parquet"
	inputDir     = "directory"
	inputText    = "text" // one .txt or .md document
)

// docKinds are the files a document directory's documents are read from,
// by extension: how each is read, and whether its headings give its title.
var docKinds = []struct {
	ext    string
	syntax syntax
	titled bool
}{
	{".md", syntaxMarkdown, true},
	{".markdown", syntaxMarkdown, true},
	{".mdx", syntaxMarkdown, true},
	{".rst", syntaxRST, true},
	{".txt", syntaxMarkdown, false},
	{".text", syntaxMarkdown, false},
}

// docKindOf is how the file name is read as a document; ok is false for a
// file that is no document.
func docKindOf(name string) (sx syntax, titled, ok bool) {
	ext := strings.ToLower(filepath.Ext(name))
	for _, k := range docKinds {
		if ext == k.ext {
			return k.syntax, k.titled, true
		}
	}
	return syntaxMarkdown, false, false
}

func isDocFile(name string) bool {
	_, _, ok := docKindOf(name)
	return ok
}

// docExtensionList names the document files' extensions, for messages:
// ".md, .markdown, ... or .text".
func docExtensionList() string {
	var exts []string
	for _, k := range docKinds {
		exts = append(exts, k.ext)
	}
	return strings.Join(exts[:len(exts)-1], ", ") + " or " + exts[len(exts)-1]
}

// kindOf says how an input path is read: a documents job also reads
// directories and .txt/.md files.
func (in Spec) kindOf(path string) string {
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
// the row's id field, or its content hash when it has none; its title the
// title field, or its front matter's title.
func newDocument(vals map[string]string, in Spec) ([]Problem, string) {
	for name, v := range vals {
		if !utf8.ValidString(v) {
			return nil, fmt.Sprintf("field %q is not valid UTF-8", name)
		}
	}
	doc := readDocument(vals["text"])
	if strings.TrimSpace(doc.body) == "" {
		return nil, fmt.Sprintf("field %q is empty", in.Fields.Text)
	}
	id := strings.TrimSpace(vals["id"])
	if id == "" {
		id = ContentHash(doc.body)
	} else if !usableID(id) {
		return nil, fmt.Sprintf("field %q must be at most %d printable characters", in.Fields.ID, maxIDLen)
	}
	source := strings.TrimSpace(vals["source"])
	if source == "" {
		source = in.Source
	}
	title := strings.TrimSpace(vals["title"])
	if title == "" {
		title = doc.title
	}
	return documentUnits(id, title, source, doc.body, in.docs, syntaxMarkdown, false), ""
}

// documentUnits cuts a document's text, read by the rules of sx, into its
// passage units, each with its document's context; its title is title,
// else (titleFromHeadings) its headings' (headingTitle).
func documentUnits(docID, title, source, text string, o documentInput, sx syntax, titleFromHeadings bool) []Problem {
	d := &cutDocument{text: text, title: title, blocks: scanBlocks(text, sx)}
	if d.title == "" && titleFromHeadings {
		d.title = headingTitle(d.blocks)
	}
	d.cuts, d.limit = cutBlocks(text, d.blocks, o.cut), max(o.cut.limit, 1)
	return withDocContext(passagesOf(docID, source, d), d, o.analysisChars)
}

// passagesOf makes a cut document's passage units.
func passagesOf(docID, source string, d *cutDocument) []Problem {
	digest := xxhash.Sum64String(d.text)
	out := make([]Problem, len(d.cuts))
	for i, c := range d.cuts {
		t := c.text(d.text)
		out[i] = Problem{
			ID: schema.PassageRecordID(docID, int32(i)), Source: source, Text: t,
			DocID: docID, Title: d.title, PassageIndex: int32(i), PassageCount: int32(len(d.cuts)), DocHash: ContentHash(t),
			docDigest: digest,
		}
		switch {
		case c.Blob:
			out[i].LeaveOut = blobReason(t)
		case longerThan(t, d.limit):
			out[i].LeaveOut = overLimitReason(t, d.limit)
		}
	}
	return out
}

// document is a document's text as the cutter reads it, and its title.
type document struct{ body, title string }

// readDocument normalizes a document's text, the only changes a passage
// makes to it: a leading byte order mark is dropped, CRLF and CR line ends
// become LF, and front matter (frontMatter) is metadata, its title the
// document's title, and no part of the text. Everything else is kept byte
// for byte.
func readDocument(raw string) document {
	s := strings.TrimPrefix(raw, "\uFEFF")
	if strings.Contains(s, "\r") {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	}
	body, title, ok := splitFrontMatter(s)
	if !ok {
		return document{body: s}
	}
	return document{body: body, title: title}
}

// DocumentRef names a document: its id, and the file (and, for a row, the
// line) it was read from.
type DocumentRef struct {
	DocID string `json:"doc_id"`
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
}

func (d DocumentRef) String() string {
	if d.Line > 0 {
		return fmt.Sprintf("%s (%s:%d)", d.DocID, d.File, d.Line)
	}
	return fmt.Sprintf("%s (%s)", d.DocID, d.File)
}

// DuplicateDocument is a document left out because Kept, earlier in input
// order, has its text.
type DuplicateDocument struct {
	Kept    DocumentRef `json:"kept"`
	Dropped DocumentRef `json:"dropped"`
}

// MaxDuplicateDocuments bounds the duplicate documents a report names.
const MaxDuplicateDocuments = 100

func RefOf(p Problem) DocumentRef { return DocumentRef{DocID: p.DocID, File: p.File, Line: p.Line} }

// seenDocuments tells a duplicate document: one whose text an earlier
// document in input order has (the paths in the order input.paths gives
// them, a directory's files in lexical order of their paths, a file's
// rows in order). The first is kept; every later one is marked with it.
type seenDocuments struct {
	first map[uint64]DocumentRef // by the document text's xxhash64
	// the document being read, and the document it duplicates (nil: none)
	current DocumentRef
	dupOf   *DocumentRef
}

// mark sets p.DuplicateOf when p's document duplicates an earlier one.
// The passages of a document come one after the other, from index 0.
func (s *seenDocuments) mark(p *Problem) {
	if p.PassageIndex == 0 || RefOf(*p) != s.current {
		s.current, s.dupOf = RefOf(*p), nil
		if first, ok := s.first[p.docDigest]; ok {
			s.dupOf = &first
		} else {
			s.first[p.docDigest] = s.current
		}
	}
	p.DuplicateOf = s.dupOf
}

// markDuplicates wraps yield so that every passage of a duplicate document
// is marked (seenDocuments); a problems input passes through.
func (in *Spec) markDuplicates(yield func(Problem) error) func(Problem) error {
	if !in.docs.on {
		return yield
	}
	seen := &seenDocuments{first: map[uint64]DocumentRef{}}
	return func(p Problem) error {
		seen.mark(&p)
		return yield(p)
	}
}

// readDocDir reads every .txt and .md file under root (recursively, in
// lexical order, leaving out hidden files and directories) as a document
// whose id is its path relative to root, with / as separator.
func readDocDir(ctx context.Context, root string, in Spec, yield func(Problem) error, bad func(*InputError)) error {
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
	err := walkFiles(root, func(path string) {
		if isDocFile(path) {
			files = append(files, path)
		}
	})
	sort.Strings(files)
	return files, err
}

// walkFiles calls visit with every regular file under root, hidden files
// and directories aside: what an input directory holds, documents or not.
func walkFiles(root string, visit func(path string)) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading input directory: %w", err)
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			visit(path)
		}
		return nil
	})
}

// readDocFile reads one .txt or .md file as the document id. A Markdown
// file's first "# " heading is its title.
func readDocFile(path, id string, in Spec, yield func(Problem) error, bad func(*InputError)) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("opening input: %w", err)
	}
	if msg := in.tooLarge(st.Size()); msg != "" {
		bad(&InputError{path, 0, msg})
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

// tooLarge says why a document file of size bytes is not read, or "".
func (in Spec) tooLarge(size int64) string {
	if size > int64(in.MaxLineBytes) {
		return fmt.Sprintf("document larger than %d bytes (input.max_line_bytes)", in.MaxLineBytes)
	}
	return ""
}

// readChecked reads a document file for the checks before a run: its
// bytes, or why it holds no document (too large).
func (in Spec) readChecked(path string) ([]byte, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if msg := in.tooLarge(st.Size()); msg != "" {
		return nil, msg, nil
	}
	b, err := os.ReadFile(path)
	return b, "", err
}

// docFileUnits makes the passages of a document file's bytes, or says why
// it holds none.
func docFileUnits(b []byte, id string, in Spec) ([]Problem, string) {
	if kind := binaryKind(b[:min(len(b), 8)]); kind != "" || strings.IndexByte(string(b[:min(len(b), 8000)]), 0) >= 0 {
		if kind == "" {
			kind = "binary data"
		}
		return nil, fmt.Sprintf("holds %s, not text", kind)
	}
	if !utf8.Valid(b) {
		return nil, "not valid UTF-8 text"
	}
	doc := readDocument(string(b))
	if strings.TrimSpace(doc.body) == "" {
		if doc.title != "" {
			return nil, "holds only front matter"
		}
		return nil, "empty document"
	}
	if !usableID(id) {
		return nil, fmt.Sprintf("its path %q is not usable as a document id (at most %d printable characters)", id, maxIDLen)
	}
	sx, titled, _ := docKindOf(id)
	return documentUnits(id, doc.title, in.Source, doc.body, in.docs, sx, titled), ""
}

// checkDocDir refuses a documents directory that holds nothing usable,
// saying what it holds instead.
func checkDocDir(root string, in Spec) error {
	files, err := docFiles(root)
	if err != nil {
		return &job.UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
	}
	if len(files) == 0 {
		return &job.UsageError{Problems: []string{fmt.Sprintf("input %s holds no %s files (%s); the grounded style reads the documents of a directory from them, or JSONL/Parquet rows with a text field",
			root, docExtensionList(), describeDir(root))}}
	}
	firstReason := ""
	for i, path := range files {
		if i == firstLinesChecked {
			break
		}
		b, msg, err := in.readChecked(path)
		if err != nil {
			return &job.UsageError{Problems: []string{fmt.Sprintf("input.paths: %v", err)}}
		}
		if msg == "" {
			_, msg = docFileUnits(b, "x"+filepath.Ext(path), in)
		}
		if msg == "" {
			return nil
		} else if firstReason == "" {
			firstReason = path + ": " + msg
		}
	}
	return &job.UsageError{Problems: []string{fmt.Sprintf("input %s: none of its first %d document files holds usable text (%s)", root, min(len(files), firstLinesChecked), firstReason)}}
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
	for _, ext := range slices.Sorted(maps.Keys(byExt)) {
		parts = append(parts, fmt.Sprintf("%d %s", byExt[ext], ext))
	}
	return "it holds " + strings.Join(parts, ", ")
}

// countUnits counts the passages of a documents input by cutting it.
func countUnits(ctx context.Context, in Spec) (int64, error) {
	var n int64
	err := ReadUnits(ctx, in, func(Problem) error { n++; return nil }, func(*InputError) {})
	return n, err
}

// Documents reports whether the input holds documents cut into passages
// (the grounded style) rather than problems.
func (s Spec) Documents() bool { return s.docs.on }

// SkippedFiles are the files under a documents input's directories that
// are not read as documents (hidden ones aside), counted by extension.
type SkippedFiles struct {
	Files    int64      `json:"files"`
	ByExt    []ExtCount `json:"by_extension"`
	Examples []string   `json:"examples"`
}

// ExtCount is how many skipped files have one extension.
type ExtCount struct {
	Ext   string `json:"ext"`
	Files int64  `json:"files"`
}

// maxSkippedExamples bounds the skipped files a report names.
const maxSkippedExamples = 3

func (s SkippedFiles) String() string {
	if s.Files == 0 {
		return "no files that are not documents"
	}
	var parts []string
	for i, e := range s.ByExt {
		if i == 6 {
			parts = append(parts, "...")
			break
		}
		if e.Ext == "" {
			parts = append(parts, fmt.Sprintf("%d with no extension", e.Files))
		} else {
			parts = append(parts, fmt.Sprintf("%d %s", e.Files, e.Ext))
		}
	}
	what := "files that are not documents"
	if s.Files == 1 {
		what = "file that is not a document"
	}
	return fmt.Sprintf("%d %s (%s)", s.Files, what, strings.Join(parts, ", "))
}

// SkippedFiles lists the files the input's directories hold that are not
// documents (by extension: docKinds), hidden files and directories aside.
func (in Spec) SkippedFiles() (SkippedFiles, error) {
	var out SkippedFiles
	if !in.docs.on {
		return out, nil
	}
	byExt := map[string]int64{}
	for _, root := range in.Paths {
		if in.kindOf(root) != inputDir {
			continue
		}
		err := walkFiles(root, func(path string) {
			if isDocFile(path) {
				return
			}
			out.Files++
			byExt[strings.ToLower(filepath.Ext(path))]++
			if len(out.Examples) < maxSkippedExamples {
				out.Examples = append(out.Examples, path)
			}
		})
		if err != nil {
			return out, err
		}
	}
	for ext, n := range byExt {
		out.ByExt = append(out.ByExt, ExtCount{Ext: ext, Files: n})
	}
	slices.SortFunc(out.ByExt, func(a, b ExtCount) int {
		switch {
		case a.Files != b.Files:
			return int(b.Files - a.Files)
		case a.Ext == "" || b.Ext == "": // files with no extension last
			return len(b.Ext) - len(a.Ext)
		}
		return strings.Compare(a.Ext, b.Ext)
	})
	return out, nil
}
