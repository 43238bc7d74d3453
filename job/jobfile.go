package job

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// LoadJobFile reads a YAML job file over the defaults. Relative paths in it
// (input.paths, out, prompts_dir, cache) are relative to the file's
// directory, not to the current one. Unknown keys and values of the wrong
// kind are all reported, each with its field path (`rollout.temperature`),
// in one *UsageError; the returned job holds every value that could be read.
func LoadJobFile(path string) (Job, error) {
	job := DefaultJob()
	b, err := os.ReadFile(path)
	if err != nil {
		return job, &UsageError{File: path, Problems: []string{fmt.Sprintf("cannot read it: %v", err)}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return job, &UsageError{File: path, Problems: []string{strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	d := &nodeDecoder{}
	if len(doc.Content) > 0 {
		d.decode("", doc.Content[0], reflect.ValueOf(&job).Elem())
	}
	job.TemplateHashes, job.Versions = nil, nil // written by the run, never read from a job file
	job.resolvePaths(filepath.Dir(path))
	if len(d.problems) > 0 {
		return job, &UsageError{File: path, Problems: d.problems}
	}
	return job, nil
}

// resolvePaths makes the job's relative paths relative to dir.
func (j *Job) resolvePaths(dir string) {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for i, p := range j.Input.Paths {
		j.Input.Paths[i] = rel(p)
	}
	j.Out, j.PromptsDir, j.Cache = rel(j.Out), rel(j.PromptsDir), rel(j.Cache)
	j.Batch.FilesDir = rel(j.Batch.FilesDir)
	for _, panel := range [][]PanelJudge{j.Judge.Panel, j.Empirical.Panel} {
		for i := range panel {
			panel[i].PromptsDir = rel(panel[i].PromptsDir)
		}
	}
}

// nodeDecoder decodes a YAML node tree into a Go value field by field, so
// that every problem is found and named by its path in the file, in the
// file's own terms (never a Go type).
type nodeDecoder struct{ problems []string }

func (d *nodeDecoder) bad(path string, n *yaml.Node, format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf("%s (line %d): %s", path, n.Line, fmt.Sprintf(format, args...)))
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	priceType    = reflect.TypeFor[Price]()
)

func (d *nodeDecoder) decode(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		if v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice {
			v.SetZero()
		}
		return
	}
	switch {
	case v.Type() == durationType:
		d.duration(path, n, v)
	case v.Type() == priceType && n.Kind == yaml.ScalarNode:
		d.freePrice(path, n, v)
	case v.Kind() == reflect.Struct:
		d.structure(path, n, v)
	case v.Kind() == reflect.Map:
		d.mapping(path, n, v)
	case v.Kind() == reflect.Slice:
		d.list(path, n, v)
	case v.Kind() == reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		if d.scalar(path, n, elem.Elem()) {
			v.Set(elem)
		}
	default:
		d.scalar(path, n, v)
	}
}

// structure decodes a mapping into a struct's fields, inline ones included.
func (d *nodeDecoder) structure(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.bad(orTop(path), n, "expected settings (key: value), found %s", describeNode(n))
		return
	}
	fields := map[string]reflect.Value{}
	collectFields(v, fields)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		fv, ok := fields[key.Value]
		if !ok {
			d.bad(join(path, key.Value), key, "unknown setting%s", suggestion(key.Value, slices.Sorted(maps.Keys(fields))))
			continue
		}
		d.decode(join(path, key.Value), val, fv)
	}
}

// collectFields maps the YAML names of a struct's fields to their values,
// flattening `yaml:",inline"` fields.
func collectFields(v reflect.Value, out map[string]reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			collectFields(v.Field(i), out)
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = v.Field(i)
	}
}

func (d *nodeDecoder) mapping(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.bad(path, n, "expected a mapping (name: value), found %s", describeNode(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(join(path, key.Value), val, elem)
		m.SetMapIndex(reflect.ValueOf(key.Value), elem)
	}
	v.Set(m)
}

// list decodes a sequence; a single scalar is read as a list of one.
func (d *nodeDecoder) list(path string, n *yaml.Node, v reflect.Value) {
	items := n.Content
	switch n.Kind {
	case yaml.SequenceNode:
	case yaml.ScalarNode:
		items = []*yaml.Node{n}
	default:
		d.bad(path, n, "expected a list, found %s", describeNode(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, item := range items {
		d.decode(fmt.Sprintf("%s[%d]", path, i), item, s.Index(i))
	}
	v.Set(s)
}

// scalar decodes a plain value, reporting a mismatch in words.
func (d *nodeDecoder) scalar(path string, n *yaml.Node, v reflect.Value) bool {
	if n.Kind != yaml.ScalarNode {
		d.bad(path, n, "expected %s, found %s", kindWords(v.Kind()), describeNode(n))
		return false
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		d.bad(path, n, "%q is not %s", n.Value, kindWords(v.Kind()))
		return false
	}
	return true
}

func (d *nodeDecoder) duration(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind == yaml.ScalarNode {
		if dur, err := time.ParseDuration(n.Value); err == nil {
			v.SetInt(int64(dur))
			return
		}
	}
	d.bad(path, n, "%s is not a duration such as 30s, 5m or 1h30m", quoteNode(n))
}

// freePrice reads `MODEL: 0`, the short form of a free model's price.
func (d *nodeDecoder) freePrice(path string, n *yaml.Node, v reflect.Value) {
	if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f == 0 {
		v.SetZero()
		return
	}
	d.bad(path, n, "a price is {prompt_per_mtok: USD, completion_per_mtok: USD}, or 0 for a model that costs nothing; found %s", quoteNode(n))
}

func kindWords(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	}
	return "a single value"
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return quoteNode(n)
}

func quoteNode(n *yaml.Node) string { return strconv.Quote(n.Value) }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "the job file"
	}
	return path
}

// suggestion names the known key closest to a mistyped one, or lists them.
func suggestion(key string, known []string) string {
	best, bestDist := "", 4
	for _, k := range known {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return "; known settings here: " + strings.Join(known, ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
