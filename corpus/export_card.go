package corpus

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rubricforge/rubricforge/schema"
)

// cardMarker identifies a dataset card written by an export, so that a
// re-export may replace it.
const cardMarker = "<!-- written by distill export (rubricforge); every export into this directory rewrites it -->"

// columnDoc says what one column holds; its type comes from the schema.
type columnDoc struct{ name, meaning string }

var verlColumns = []columnDoc{
	{"data_source", `"rubricforge/" + the record's source ("rubricforge" when it has none)`},
	{"prompt", "what the policy sees: the rollout template the corpus's rollouts were sampled with (its step-header and answer-tag format) around the problem, or --user-template's; with --system-prompt alone, that system message and the bare problem; a grounded row: the --system-prompt message if given, then the question alone; never the rubric, the reference, the answer or the passage"},
	{"ability", `"math"; "grounded" for a grounded question`},
	{"reward_model", `style "rubric"; ground_truth: the record's answer (empty for a grounded question)`},
	{"extra_info", "split; index: the row within the split; id: the problem id (a grounded row: the question id, record id + \"-q\" + k); question; answer; rubric: JSON array of the rubric items (a grounded row: of the criteria); scheme: the rubric's default reward scheme; spec_version; passage: a grounded question's passage for the judge, empty otherwise"},
	{"label", "JSON of the reward spec rewardd reads (id, scheme, style, question, ground_truth, rubric; a grounded question's passage and criteria under grounded)"},
	{"solution", "the record's answer, for TRL's accuracy_reward (empty for a grounded question)"},
}

var rarColumns = []columnDoc{
	{"question", "the problem, or a grounded question"},
	{"reference_answer", "the ground-truth answer; for a grounded question its passage, the judge's grounding"},
	{"question_source", "the record's source"},
	{"rubric", "title: the item type; description: the item text; weight: signed, negative for a PITFALL (satisfying it is the mistake). A grounded question's criteria: title: the name; description; weight"},
	{"id", "the problem id, or a grounded question's id (record id + \"-q\" + k)"},
}

var srarLinesColumns = []columnDoc{
	{"problem", "the problem"},
	{"rubric", `one "<<TYPE>>: text" line per item (SUGGEST, PITFALL, BONUS, ANSWER), as SRaR's distillation writes them`},
	{"ground_truth", "the ground-truth answer"},
	{"id", "the problem id"},
}

var jsonlColumns = []columnDoc{
	{"id", "the problem id"},
	{"source", "the input's source name"},
	{"split", "train, validation or test"},
	{"problem", "the problem"},
	{"answer", "the ground-truth answer"},
	{"reference", "the input's reference solution, absent when it had none"},
	{"style", "srar, factual_process or grounded"},
	{"rubric", "the rubric items with the validity judge's verdicts and the empirical figures"},
	{"rollouts", "the sampled solutions, their verification and satisfaction verdicts"},
	{"n_correct", "correct rollouts"},
	{"pass_rate", "n_correct over the rollouts"},
	{"provenance", "models, templates, job fingerprint, spec and tool version, created_at"},
	{"usage", "requests, tokens and cost spent on the record"},
	{"grounded", "grounded style only: the passage, its analysis, its questions with their weighted criteria; absent otherwise"},
	{"panel", "every judge's own verdicts when a stage asked a panel of judges (judge.panel, empirical.panel); absent otherwise"},
}

// schema is the parquet schema of a format's rows; jsonl's records have
// the shape of the corpus record.
func (f *exportFormat) schema() *parquet.Schema {
	switch f.name {
	case FormatVerl:
		return parquet.SchemaOf(new(VerlRow))
	case FormatRaR:
		return parquet.SchemaOf(new(RaRRow))
	case FormatSRaRLines:
		return parquet.SchemaOf(new(SRaRLinesRow))
	}
	return parquet.SchemaOf(new(schema.Record))
}

// typeString names a parquet node's type the way Arrow and HF datasets
// show it: string, int64, list<struct<...>>; "?" marks a nullable value.
func typeString(n parquet.Node) string {
	s := baseTypeString(n)
	if n.Optional() {
		s += "?"
	}
	return s
}

func baseTypeString(n parquet.Node) string {
	var lt format.LogicalTypeValue
	if l := n.Type().LogicalType(); l != nil {
		lt = l.Value
	}
	if !n.Leaf() {
		if _, ok := lt.(*format.ListType); ok {
			return "list<" + typeString(n.Fields()[0].Fields()[0]) + ">"
		}
		parts := make([]string, len(n.Fields()))
		for i, f := range n.Fields() {
			parts[i] = f.Name() + ": " + typeString(f)
		}
		return "struct<" + strings.Join(parts, ", ") + ">"
	}
	switch lt.(type) {
	case *format.StringType:
		return "string"
	case *format.TimestampType:
		return "timestamp[ms, UTC]"
	}
	switch n.Type().Kind() {
	case parquet.Boolean:
		return "bool"
	case parquet.Int32:
		return "int32"
	case parquet.Int64:
		return "int64"
	case parquet.Double:
		return "double"
	case parquet.ByteArray:
		return "binary"
	}
	return n.Type().String()
}

// exportStats gathers the figures of export.json and the card.
type exportStats struct {
	recordsIn, recordsOut, recordsDropped, itemsDropped int64
	duplicates                                          int64 // records whose id an earlier shard held
	splitIn                                             map[string]int64
	fps, toolVersions                                   map[string]bool
	models                                              map[string]map[string]bool // stage -> models
	newest, oldest                                      time.Time
	types                                               map[string]*typeCounts
	rowsByRole                                          map[string]int64 // rows written per role
	noRubricatorRow                                     int64            // records written without one, in an export of both roles
}

// typeCounts is the validity of one item type over the records in.
type typeCounts struct {
	items, valid, invalid, unjudged, empMeasured, empValid, exported int64
}

func newExportStats() exportStats {
	return exportStats{splitIn: map[string]int64{}, fps: map[string]bool{}, toolVersions: map[string]bool{},
		models: map[string]map[string]bool{}, types: map[string]*typeCounts{}, rowsByRole: map[string]int64{}}
}

// in counts a record of the selected splits before --valid-only.
func (s *exportStats) in(rec *schema.Record) {
	s.recordsIn++
	s.splitIn[rec.Split]++
	p := rec.Provenance
	s.fps[p.JobFingerprint] = true
	s.toolVersions[p.ToolVersion] = true
	for stage, m := range map[string]*string{"rollout": &p.RolloutModel, "distill": &p.DistillModel, "judge": p.JudgeModel, "empirical": p.EmpiricalModel} {
		if m != nil && *m != "" {
			if s.models[stage] == nil {
				s.models[stage] = map[string]bool{}
			}
			s.models[stage][*m] = true
		}
	}
	if t := p.CreatedAt.UTC(); s.recordsIn == 1 || t.After(s.newest) {
		s.newest = t
	}
	if t := p.CreatedAt.UTC(); s.recordsIn == 1 || t.Before(s.oldest) {
		s.oldest = t
	}
	s.groundedIn(rec)
	for _, it := range rec.Rubric {
		c := s.typeCounts(it.Type)
		c.items++
		switch {
		case it.Valid == nil:
			c.unjudged++
		case *it.Valid:
			c.valid++
		default:
			c.invalid++
		}
		if it.EmpiricalValid != nil {
			c.empMeasured++
			if *it.EmpiricalValid {
				c.empValid++
			}
		}
	}
}

// out counts a record as written.
func (s *exportStats) out(rec *schema.Record) {
	s.recordsOut++
	s.groundedOut(rec)
	for _, it := range rec.Rubric {
		s.typeCounts(it.Type).exported++
	}
}

func (s *exportStats) typeCounts(t string) *typeCounts {
	c := s.types[t]
	if c == nil {
		c = &typeCounts{}
		s.types[t] = c
	}
	return c
}

// contentTags are the card's tags for what the records hold: math for
// rubric items (problems with ground-truth answers), question-answering
// and document-grounded for grounded questions.
func (s *exportStats) contentTags() []string {
	var grounded, math bool
	for t := range s.types {
		if t == cardCriterionType {
			grounded = true
		} else {
			math = true
		}
	}
	var tags []string
	if math || !grounded {
		tags = append(tags, "math")
	}
	if grounded {
		tags = append(tags, "question-answering", "document-grounded")
	}
	return tags
}

func (s *exportStats) fingerprints() []string {
	return slices.Sorted(maps.Keys(s.fps))
}

// cardInput is everything the dataset card shows.
type cardInput struct {
	opt      *ExportOptions
	format   *exportFormat
	manifest *ExportManifest
	stats    *exportStats
}

// renderCard writes the dataset card: YAML front matter that HF datasets
// and the Hub read (configs naming the data files of every split), then what
// the export holds, its columns, the rubric items' validity by type, and
// where it came from. It depends on nothing but its input, so the same
// export writes the same card.
func renderCard(in cardInput) []byte {
	var b bytes.Buffer
	in.frontMatter(&b)
	fmt.Fprintf(&b, "%s\n\n# Rubric corpus, %s format\n\n", cardMarker, in.opt.Format)
	m := in.manifest
	fmt.Fprintf(&b, "Rubrics for rubric-reward RL, exported by rubricforge's `distill export` from the corpus `%s` (%d records in, %d out).\n\n",
		m.Source, m.RecordsIn, m.RecordsOut)
	in.rolesLine(&b)
	fmt.Fprintf(&b, "Made with:\n\n```\n%s\n```\n\n", in.command())
	in.splitsTable(&b)
	in.columnsTable(&b)
	in.validityTable(&b)
	in.reviewSection(&b)
	in.provenance(&b)
	in.usage(&b)
	return b.Bytes()
}

func (in cardInput) frontMatter(b *bytes.Buffer) {
	b.WriteString("---\n")
	fmt.Fprintf(b, "pretty_name: %q\n", "rubricforge rubric corpus ("+in.opt.Format+")")
	b.WriteString("tags:\n- rubricforge\n- rubrics\n- reinforcement-learning\n")
	for _, tag := range in.stats.contentTags() {
		fmt.Fprintf(b, "- %s\n", tag)
	}
	b.WriteString("task_categories:\n- reinforcement-learning\n")
	fmt.Fprintf(b, "size_categories:\n- %s\n", sizeCategory(in.manifest.RecordsOut))
	b.WriteString("configs:\n- config_name: default\n  data_files:\n")
	for _, split := range ExportSplits {
		files := in.filesOf(split)
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(b, "  - split: %s\n    path:\n", split)
		for _, f := range files {
			fmt.Fprintf(b, "    - %s\n", f.File)
		}
	}
	b.WriteString("---\n\n")
}

func (in cardInput) filesOf(split string) []ExportFile {
	var out []ExportFile
	for _, f := range in.manifest.Files {
		if strings.HasPrefix(f.File, exportDataDir+"/"+split+"-") {
			out = append(out, f)
		}
	}
	return out
}

// sizeCategory is the Hub's size_categories value for n rows.
func sizeCategory(n int64) string {
	bounds := []struct {
		max  int64
		name string
	}{{1_000, "n<1K"}, {10_000, "1K<n<10K"}, {100_000, "10K<n<100K"}, {1_000_000, "100K<n<1M"}, {10_000_000, "1M<n<10M"}}
	for _, bd := range bounds {
		if n < bd.max {
			return bd.name
		}
	}
	return "10M<n<100M"
}

// command is the distill export command line that makes this export.
func (in cardInput) command() string {
	o := in.opt
	parts := []string{"distill export", in.manifest.Source, "--format", o.Format, "--out", o.Out}
	if len(o.Splits) > 0 {
		parts = append(parts, "--split", strings.Join(o.Splits, ","))
	}
	if o.SystemPromptFile != "" {
		parts = append(parts, "--system-prompt", o.SystemPromptFile)
	}
	if o.UserTemplateFile != "" {
		parts = append(parts, "--user-template", o.UserTemplateFile)
	}
	if in.manifest.Role != "" {
		parts = append(parts, "--role", in.manifest.Role)
	}
	if o.Hints {
		parts = append(parts, "--hints")
	}
	if o.ValidOnly {
		parts = append(parts, "--valid-only")
	}
	if r := in.manifest.Review; r != nil {
		parts = append(parts, "--review")
		parts = append(parts, r.Logs...)
		if r.Policy != PolicyNone {
			parts = append(parts, "--review-policy", r.Policy)
		}
	}
	if o.RowsPerFile != DefaultRowsPerFile {
		parts = append(parts, "--rows-per-file", fmt.Sprint(o.RowsPerFile))
	}
	return strings.Join(parts, " ")
}

func (in cardInput) splitsTable(b *bytes.Buffer) {
	b.WriteString("## Splits\n\n| split | rows | files | bytes |\n| --- | ---: | ---: | ---: |\n")
	for _, split := range ExportSplits {
		c, ok := in.manifest.Splits[split]
		if !ok {
			continue
		}
		var size int64
		for _, f := range in.filesOf(split) {
			size += f.Bytes
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d |\n", split, c.Rows, c.Files, size)
	}
	b.WriteString("\n")
}

func (in cardInput) columnsTable(b *bytes.Buffer) {
	fmt.Fprintf(b, "## Columns\n\n")
	if in.format.ext == "jsonl" {
		b.WriteString("One corpus record per line, as JSON with these keys (the types are those of the corpus shards):\n\n")
	}
	b.WriteString("| column | type | holds |\n| --- | --- | --- |\n")
	fields := in.format.schema().Fields()
	for _, c := range in.format.columns {
		typ := "?"
		if i := slices.IndexFunc(fields, func(f parquet.Field) bool { return f.Name() == c.name }); i >= 0 {
			typ = typeString(fields[i])
		}
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", c.name, typ, c.meaning)
	}
	b.WriteString("\n")
}

func (in cardInput) validityTable(b *bytes.Buffer) {
	s := in.stats
	b.WriteString("## Rubric items by type\n\n")
	b.WriteString("Over the records in (before `--valid-only`): the validity judge's verdicts, the empirical validity " +
		"(satisfaction varies across the rollouts and correlates with correctness), and the items exported.\n\n")
	b.WriteString("| type | items | judged valid | judged invalid | not judged | empirically valid | exported |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	order := slices.Clone(schema.ItemTypes)
	for _, t := range slices.Sorted(maps.Keys(s.types)) {
		if !slices.Contains(order, t) {
			order = append(order, t)
		}
	}
	for _, t := range order {
		c, ok := s.types[t]
		if !ok {
			continue
		}
		emp := "—"
		if c.empMeasured > 0 {
			emp = fmt.Sprintf("%d of %d", c.empValid, c.empMeasured)
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %s | %d |\n", t, c.items, c.valid, c.invalid, c.unjudged, emp, c.exported)
	}
	b.WriteString("\n")
}

func (in cardInput) provenance(b *bytes.Buffer) {
	m, s := in.manifest, in.stats
	b.WriteString("## Provenance\n\n")
	fmt.Fprintf(b, "- corpus: `%s`, spec version %s, job fingerprints %s\n", m.Source, m.SpecVersion, joinCode(m.JobFingerprints))
	fmt.Fprintf(b, "- records: %d in, %d out, %d dropped (rubric no longer holds after dropping invalid items); invalid items dropped: %d\n",
		m.RecordsIn, m.RecordsOut, m.RecordsDropped, m.ItemsDropped)
	for _, stage := range []string{"rollout", "distill", "judge", "empirical"} {
		models := "off"
		if set := s.models[stage]; len(set) > 0 {
			models = joinCode(slices.Sorted(maps.Keys(set)))
		}
		fmt.Fprintf(b, "- %s model: %s\n", stage, models)
	}
	fmt.Fprintf(b, "- tool versions: %s\n", joinCode(slices.Sorted(maps.Keys(s.toolVersions))))
	fmt.Fprintf(b, "- records created: %s to %s\n", s.oldest.Format(time.RFC3339), s.newest.Format(time.RFC3339))
	b.WriteString("- files: listed with rows, bytes and xxhash64 in `export.json`\n\n")
}

func (in cardInput) usage(b *bytes.Buffer) {
	b.WriteString("## Use\n\n```python\nfrom datasets import load_dataset\nds = load_dataset(\"" + in.opt.Out + "\")\n```\n\n")
	if in.format.name == FormatVerl {
		b.WriteString("verl takes the file lists (`data.train_files`, `data.val_files`) and scores through " +
			"`examples/trainers/rubric_reward.py` (`custom_reward_function.path`); TRL takes the directory and the same file's " +
			"`rubric_reward`; OpenRLHF reads `prompt` and `label` (`--data.input_key prompt --data.apply_chat_template " +
			"--data.label_key label`) and slime `--input-key prompt --label-key label`, both scoring through rewardd.\n")
		if len(in.filesOf("validation")) == 0 {
			b.WriteString("\nThis export has no validation split: give verl's `data.val_files` the train files, as " +
				"`examples/trainers/verl.sh` does.\n")
		}
	}
}

func joinCode(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return "`" + strings.Join(xs, "`, `") + "`"
}
