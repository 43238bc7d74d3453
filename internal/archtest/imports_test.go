package archtest

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/rubricforge/rubricforge"

// rule is one row of the table in docs/architecture.md.
type rule struct {
	line    int
	mayUse  []string // module packages it may import
	pure    bool     // no network, no HTTP, no clock
	sources string   // where the row was read, for messages
}

// The table's rows look like
//
//	| `reward` | the papers' formulas ... | `schema`, `verify` | pure |
//
// between the two marker comments; "—" in the third column means nothing
// from the module.
const (
	tableStart = "<!-- import table: read by internal/archtest -->"
	tableEnd   = "<!-- end of import table -->"
)

var backticked = regexp.MustCompile("`([^`]+)`")

// readRules parses the import table of the architecture page.
func readRules(path string) (map[string]rule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rules := map[string]rule{}
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == tableStart:
			in = true
			continue
		case line == tableEnd:
			in = false
			continue
		}
		if !in || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| package") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 cells (package | job | may import | pure), got %d", path, n, len(cells))
		}
		names := backticked.FindAllStringSubmatch(cells[0], -1)
		if len(names) != 1 {
			return nil, fmt.Errorf("%s:%d: the first cell names %d packages in backticks, want 1", path, n, len(names))
		}
		r := rule{line: n, pure: strings.TrimSpace(cells[3]) == "pure", sources: fmt.Sprintf("%s:%d", path, n)}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			r.mayUse = append(r.mayUse, m[1])
		}
		if _, dup := rules[names[0][1]]; dup {
			return nil, fmt.Errorf("%s:%d: package %s has two rows", path, n, names[0][1])
		}
		rules[names[0][1]] = r
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s: no import table between %q and %q", path, tableStart, tableEnd)
	}
	return rules, nil
}

// pkgFacts is what the check needs of one package's non-test sources.
type pkgFacts struct {
	imports map[string]bool // import paths, module ones relative to the module
	clock   []string        // positions of time.Now / time.Since / time.Until calls
}

// readPackages parses the non-test Go files of every package under root,
// leaving out nested modules and testdata.
func readPackages(root string) (map[string]*pkgFacts, error) {
	pkgs := map[string]*pkgFacts{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d.Name())
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		p := pkgs[filepath.ToSlash(rel)]
		if p == nil {
			p = &pkgFacts{imports: map[string]bool{}}
			pkgs[filepath.ToSlash(rel)] = p
		}
		addFacts(fset, f, p)
		return nil
	})
	return pkgs, err
}

// skipDir leaves out hidden directories, testdata and nested modules.
func skipDir(root, path, name string) error {
	if path == root {
		return nil
	}
	if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

// addFacts records one file's imports and clock reads.
func addFacts(fset *token.FileSet, f *ast.File, p *pkgFacts) {
	timeName := ""
	for _, spec := range f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		if path == "time" {
			timeName = "time"
			if spec.Name != nil {
				timeName = spec.Name.Name
			}
		}
		if rest, ok := strings.CutPrefix(path, module+"/"); ok {
			path = rest
		}
		p.imports[path] = true
	}
	if timeName == "" {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && slices.Contains([]string{"Now", "Since", "Until"}, sel.Sel.Name) {
			p.clock = append(p.clock, fset.Position(sel.Pos()).String())
		}
		return true
	})
}

// impure are the imports a pure package may not have.
var impure = []string{"net", "net/http", "net/url", "os/exec"}

// violations compares the packages' facts with the table.
func violations(rules map[string]rule, pkgs map[string]*pkgFacts) []string {
	var out []string
	for name, p := range pkgs {
		r, ok := rules[name]
		if !ok {
			out = append(out, fmt.Sprintf("package %s has no row in the import table", name))
			continue
		}
		for imp := range p.imports {
			if _, inModule := pkgs[imp]; inModule && !slices.Contains(r.mayUse, imp) {
				out = append(out, fmt.Sprintf("%s imports %s, which its row (%s) does not allow", name, imp, r.sources))
			}
			if r.pure && slices.Contains(impure, imp) {
				out = append(out, fmt.Sprintf("%s is pure (%s) but imports %s", name, r.sources, imp))
			}
		}
		if r.pure && len(p.clock) > 0 {
			out = append(out, fmt.Sprintf("%s is pure (%s) but reads the clock at %s", name, r.sources, strings.Join(p.clock, ", ")))
		}
	}
	for name, r := range rules {
		if _, ok := pkgs[name]; !ok {
			out = append(out, fmt.Sprintf("%s: the table names package %s, which does not exist", r.sources, name))
		}
	}
	slices.Sort(out)
	return out
}

// TestImportsFollowTheArchitecture: every package of the module has a row
// in docs/architecture.md's import table and imports only what its row
// allows; pure packages import no network and read no clock.
func TestImportsFollowTheArchitecture(t *testing.T) {
	root := filepath.Join("..", "..")
	rules, err := readRules(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := readPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("read only %d packages from %s", len(pkgs), root)
	}
	for _, v := range violations(rules, pkgs) {
		t.Error(v)
	}
}

// TestViolationsAreFound: the check reports each kind of violation, so the
// test above can fail: an import against the table, a package without a
// row, a row without a package, and a pure package using the network or
// the clock.
func TestViolationsAreFound(t *testing.T) {
	page := filepath.Join(t.TempDir(), "architecture.md")
	table := tableStart + `
| package | its one job | may import | pure |
| --- | --- | --- | --- |
| ` + "`top`" + ` | uses things | ` + "`low`" + ` | |
| ` + "`low`" + ` | formulas | — | pure |
| ` + "`gone`" + ` | nothing any more | — | |
` + tableEnd + "\n"
	if err := os.WriteFile(page, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := readRules(page)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*pkgFacts{
		"top":   {imports: map[string]bool{"low": true, "fmt": true}},
		"low":   {imports: map[string]bool{"top": true, "net/http": true}, clock: []string{"low/a.go:3:9"}},
		"extra": {imports: map[string]bool{}},
	}
	got := strings.Join(violations(rules, pkgs), "\n")
	for _, want := range []string{
		"low imports top, which its row",
		"low is pure",
		"but imports net/http",
		"reads the clock at low/a.go:3:9",
		"package extra has no row",
		"names package gone, which does not exist",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations do not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "top imports") {
		t.Errorf("an allowed import reported:\n%s", got)
	}
}
