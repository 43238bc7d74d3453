package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/internal/jsonscan"
)

// The JSON parsers share these rules. The JSON is found with ExtractJSON's
// scan (prose, fences and the reply's reasoning around it are fine); a
// judge's verdict is the one in its reply's answer, and two different ones
// there are an error (judgeVerdict). Keys match
// without regard to case, as in encoding/json, but a key given twice is an
// error. Unknown keys are ignored: models like to add a "reason" or a
// "category", and nothing we need is lost. A key we need that is missing,
// null or of the wrong JSON type is an error naming the item and the field;
// nothing is defaulted. Integers may be written as integer-valued numbers
// (5.0, 5e0) but not as strings; booleans must be true or false, not "true"
// or 1.

// Verdict is the validity judge's verdict on one rubric item.
type Verdict struct {
	ID     int32
	Valid  bool
	Reason string
}

// Limits of the factual/process style.
const (
	MinFactualProcessItems = 3
	MaxFactualProcessItems = 10
	MinWeight              = 1
	MaxWeight              = 5
)

var fpPrefixRE = regexp.MustCompile(`(?i)^([*_]{0,3})\s*(factual|process)\s+criteri(?:a|on)\s*([*_]{0,3})\s*:`)

// ParseFactualProcess parses a factual/process rubric: a JSON array of 3 to 10
// objects {"description": string, "weight": integer 1-5}. A description must
// begin with "Factual Criteria:" or "Process Criteria:" (any case, "Criterion"
// also accepted, bold or italic markers around the prefix tolerated); the
// prefix gives the item type and is removed from the text, and white space in
// the text is collapsed. Two items with the same type and text are an error.
// Items get ids 1..n in order and polarity +1.
func ParseFactualProcess(text string) ([]Item, error) {
	objs, line, err := objectArray(text)
	if err != nil {
		return nil, err
	}
	if n := len(objs); n < MinFactualProcessItems || n > MaxFactualProcessItems {
		return nil, parseErr(line, 0, "", "the array has %d items; between %d and %d are required", n, MinFactualProcessItems, MaxFactualProcessItems)
	}
	items := make([]Item, 0, len(objs))
	seen := make(map[string]int, len(objs))
	for _, o := range objs {
		desc, err := o.str("description")
		if err != nil {
			return nil, err
		}
		typ, body, ok := splitCriteriaPrefix(desc)
		if !ok {
			return nil, o.fieldErr("description", "must begin with \"Factual Criteria: \" or \"Process Criteria: \", got %s", excerpt(strings.TrimSpace(desc)))
		}
		if body == "" {
			return nil, o.fieldErr("description", "has no text after the %q prefix", typeLabel(typ))
		}
		w, err := o.integer("weight", MinWeight, MaxWeight)
		if err != nil {
			return nil, err
		}
		key := typ + "\x00" + body
		if prev, dup := seen[key]; dup {
			return nil, o.fieldErr("description", "repeats item %d; items must not overlap", prev)
		}
		seen[key] = o.item
		items = append(items, Item{
			ID:       int32(len(items) + 1),
			Type:     typ,
			Text:     body,
			Weight:   float64(w),
			Polarity: PolarityOf(typ),
		})
	}
	return items, nil
}

func typeLabel(typ string) string {
	if typ == TypeFactual {
		return "Factual Criteria:"
	}
	return "Process Criteria:"
}

// splitCriteriaPrefix splits "Factual Criteria: text" into its type and the
// collapsed text.
func splitCriteriaPrefix(desc string) (typ, body string, ok bool) {
	s := strings.TrimSpace(desc)
	m := fpPrefixRE.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	typ = TypeProcess
	if strings.EqualFold(m[2], "factual") {
		typ = TypeFactual
	}
	mark := m[1]
	markOpen := mark != "" && m[3] != mark
	rest := strings.TrimSpace(s[len(m[0]):])
	if markOpen && strings.HasPrefix(rest, mark) {
		rest, markOpen = rest[len(mark):], false
	}
	if markOpen && strings.HasSuffix(rest, mark) {
		rest = rest[:len(rest)-len(mark)]
	}
	return typ, collapseSpace(rest), true
}

// ParseValidity parses the validity judge's reply for one item:
// {"valid": bool, "reason": string}: the JSON object with a "valid" key in
// the reply's answer (judgeVerdict); wrapped in a one-element array is fine, in a longer array is an
// error. The verdict's ID is 0; the caller knows which item it asked about.
func ParseValidity(text string) (Verdict, error) {
	accept := func(r reply, span string, off int) error {
		o, err := decodeObject([]byte(span), 0, 0)
		if err == nil {
			if _, ok := o.fields.get("valid"); !ok {
				err = parseErr(0, 0, "", "the JSON object has no \"valid\" key")
			}
		}
		return atLine(err, r, off)
	}
	return judgeVerdict(text, "", '{', accept, decodeValidity, func(a, b Verdict) bool { return a.Valid == b.Valid })
}

// decodeValidity reads the validity judge's object at off of r.
func decodeValidity(r reply, span string, off int) (Verdict, error) {
	if arr, aoff, err := findJSON(r, '[', acceptObjectArray); err == nil && aoff < off && off < aoff+len(arr) {
		if n := jsonscan.CountElements([]byte(arr)); n > 1 {
			return Verdict{}, parseErr(r.lineAt(aoff), 0, "", "expected one JSON object for the one item, got an array of %d", n)
		}
	}
	o, err := decodeObject([]byte(span), r.lineAt(off), 0)
	if err != nil {
		return Verdict{}, err
	}
	var v Verdict
	if v.Valid, err = o.boolean("valid"); err != nil {
		return Verdict{}, err
	}
	if v.Reason, err = o.str("reason"); err != nil {
		return Verdict{}, err
	}
	return v, nil
}

// ParseValidityBatch parses the validity judge's reply for several items:
// [{"id": int, "valid": bool, "reason": string}, ...]. Every id in ids must
// appear exactly once; the verdicts come back in the order of ids.
func ParseValidityBatch(text string, ids []int32) ([]Verdict, error) {
	same := func(a, b Verdict) bool { return a.ID == b.ID && a.Valid == b.Valid }
	return parseBatch(text, "", "ParseValidityBatch", ids, same, func(o jsonObj, id int32) (Verdict, error) {
		v := Verdict{ID: id}
		var err error
		if v.Valid, err = o.boolean("valid"); err != nil {
			return v, err
		}
		if v.Reason, err = o.str("reason"); err != nil {
			return v, err
		}
		return v, nil
	})
}

// ParseSatisfaction parses the satisfaction judge's reply:
// [{"id": int, "satisfied": bool, "step": int}, ...]. Every id in ids must
// appear exactly once; the verdicts come back in the order of ids. A step
// must be -1, 0 or 1..steps; when steps <= 0 (the step count of the solution
// is not known) any integer step >= -1 is accepted.
func ParseSatisfaction(text string, ids []int32, steps int) ([]Satisfaction, error) {
	return ParseSatisfactionOf(text, "", ids, steps)
}

// ParseSatisfactionOf is ParseSatisfaction of a reply about judged, the
// response the judge was shown: a verdict in the reply that the response
// itself holds (white space and backslashes aside) is a quote of what the
// response planted, not the judge's verdict, so a reply whose only
// verdicts are such quotes is a parse failure (see judgeVerdict).
func ParseSatisfactionOf(text, judged string, ids []int32, steps int) ([]Satisfaction, error) {
	hi := int64(math.MaxInt32)
	if steps > 0 {
		hi = int64(steps)
	}
	same := func(a, b Satisfaction) bool { return a == b }
	return parseBatch(text, judged, "ParseSatisfaction", ids, same, func(o jsonObj, id int32) (Satisfaction, error) {
		s := Satisfaction{ID: id}
		var err error
		if s.Satisfied, err = o.boolean("satisfied"); err != nil {
			return s, err
		}
		step, err := o.integer("step", -1, hi)
		if err != nil {
			return s, err
		}
		s.Step = int32(step)
		return s, nil
	})
}

// parseBatch finds a judge's JSON array of objects with an "id" each in its
// reply's answer (judgeVerdict; same says when two verdicts on one id
// agree), checks that the ids are exactly ids, and decodes each object with
// one. judged is the text the judge was shown ("" for none; see
// judgeVerdict).
func parseBatch[T any](text, judged, fn string, ids []int32, same func(a, b T) bool, one func(o jsonObj, id int32) (T, error)) ([]T, error) {
	index := make(map[int32]int, len(ids))
	for k, id := range ids {
		if _, dup := index[id]; dup {
			return nil, fmt.Errorf("schema: %s: id %d asked for twice", fn, id)
		}
		index[id] = k
	}
	decode := func(r reply, span string, off int) ([]T, error) {
		objs, err := splitObjects(r, span, off)
		if err != nil {
			return nil, err
		}
		return batchVerdicts(objs, ids, index, one)
	}
	return judgeVerdict(text, judged, '[', acceptObjectArray, decode, func(a, b []T) bool { return slices.EqualFunc(a, b, same) })
}

// batchVerdicts decodes the objects of a batch reply, one per id.
func batchVerdicts[T any](objs []jsonObj, ids []int32, index map[int32]int, one func(o jsonObj, id int32) (T, error)) ([]T, error) {
	out := make([]T, len(ids))
	from := make([]int, len(ids)) // item number that gave each verdict, 0 if none
	for _, o := range objs {
		id64, err := o.integer("id", math.MinInt32, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		id := int32(id64)
		k, ok := index[id]
		if !ok {
			return nil, o.fieldErr("id", "unknown id %d; the ids are %s", id, describeIDs(ids))
		}
		if from[k] != 0 {
			return nil, o.fieldErr("id", "id %d appears twice (items %d and %d); give every id exactly once", id, from[k], o.item)
		}
		v, err := one(o, id)
		if err != nil {
			return nil, err
		}
		out[k] = v
		from[k] = o.item
	}
	var missing []int32
	for k, id := range ids {
		if from[k] == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		noun := "id"
		if len(missing) > 1 {
			noun = "ids"
		}
		return nil, parseErr(0, 0, "", "no verdict for %s %s; give every id exactly once", noun, describeIDs(missing))
	}
	return out, nil
}

func describeIDs(ids []int32) string {
	if len(ids) == 0 {
		return "none"
	}
	s := slices.Clone(ids)
	slices.Sort(s)
	contiguous := true
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1]+1 {
			contiguous = false
			break
		}
	}
	if contiguous && len(s) > 2 {
		return fmt.Sprintf("%d to %d", s[0], s[len(s)-1])
	}
	const show = 20
	parts := make([]string, 0, min(len(s), show))
	for i, id := range s {
		if i == show {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, strconv.Itoa(int(id)))
	}
	return strings.Join(parts, ", ")
}

// jsonObj is one JSON object of a reply, keys folded to lower case, with the
// line it starts on, and where it is: its 1-based position in the enclosing
// array (0 when it stands alone), or the path of fields and indexes that
// leads to it when it is nested ("criteria[2]"), which errors then name
// instead of the position.
type jsonObj struct {
	fields members
	line   int
	item   int
	path   string
}

// at is o reached by path, for errors that name nested fields.
func (o jsonObj) at(path string) jsonObj {
	o.path = path
	return o
}

// field is a member's name as errors give it: with o's path, if any.
func (o jsonObj) field(name string) string {
	if o.path == "" {
		return name
	}
	return o.path + "." + name
}

// members are an object's members in order, keys folded to lower case and
// each given once. A reply's objects hold a handful of keys: a slice
// searched in order costs less than a map, and one allocation.
type members []member

type member struct {
	key string
	val json.RawMessage
}

// get returns the value of key, and whether the object has it.
func (ms members) get(key string) (json.RawMessage, bool) {
	for i := range ms {
		if ms[i].key == key {
			return ms[i].val, true
		}
	}
	return nil, false
}

// indexAfter is how many members an object holds before decodeObject
// looks keys up in a map to find one given twice.
const indexAfter = 16

func (o jsonObj) fieldErr(name, format string, args ...any) *ParseError {
	if o.path != "" {
		return parseErr(o.line, 0, o.field(name), format, args...)
	}
	return parseErr(o.line, o.item, name, format, args...)
}

func (o jsonObj) value(name string) (json.RawMessage, error) {
	v, ok := o.fields.get(name)
	if !ok {
		return nil, o.fieldErr(name, "missing")
	}
	if string(v) == "null" {
		return nil, o.fieldErr(name, "is null")
	}
	return v, nil
}

func (o jsonObj) boolean(name string) (bool, error) {
	v, err := o.value(name)
	if err != nil {
		return false, err
	}
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, o.fieldErr(name, "must be a JSON boolean (true or false), got %s", describeJSON(v))
}

func (o jsonObj) str(name string) (string, error) {
	v, err := o.value(name)
	if err != nil {
		return "", err
	}
	if v[0] != '"' {
		return "", o.fieldErr(name, "must be a JSON string, got %s", describeJSON(v))
	}
	s, ok := jsonscan.Unquote(v)
	if !ok {
		return "", o.fieldErr(name, "%v", jsonscan.ErrNotJSON)
	}
	return s, nil
}

// integer reads an integer-valued JSON number in [lo, hi].
func (o jsonObj) integer(name string, lo, hi int64) (int64, error) {
	v, err := o.value(name)
	if err != nil {
		return 0, err
	}
	want := func() string {
		if lo == math.MinInt32 {
			return "an integer"
		}
		if hi == math.MaxInt32 {
			return fmt.Sprintf("an integer >= %d", lo)
		}
		return fmt.Sprintf("an integer from %d to %d", lo, hi)
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		return 0, o.fieldErr(name, "must be %s as a JSON number, got %s", want(), describeJSON(v))
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, o.fieldErr(name, "must be %s, got %s", want(), v)
	}
	return int64(f), nil
}

func describeJSON(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "the string " + excerpt(string(v[1:len(v)-1]))
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "the boolean " + string(v)
	case 'n':
		return "null"
	}
	return "the number " + string(v)
}

// acceptObjectArray accepts a JSON array whose elements are all objects.
func acceptObjectArray(r reply, span string, off int) error {
	k := 0
	err := jsonscan.EachElement([]byte(span), func(e []byte, _ int) error {
		if k++; e[0] != '{' {
			return parseErr(0, k, "", "expected a JSON array of objects, but this element is %s", describeJSON(e))
		}
		return nil
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		err = parseErr(0, 0, "", "expected a JSON array of objects: %v", err)
	}
	return atLine(err, r, off)
}

// atLine sets the line of a *ParseError without one to the line of byte off.
// Counting lines is left to the error path so that scanning many candidates
// stays linear.
func atLine(err error, r reply, off int) error {
	if pe, ok := err.(*ParseError); ok && pe.Line == 0 {
		pe.Line = r.lineAt(off)
	}
	return err
}

// splitObjects decodes a JSON array of objects found at byte off of r.body.
// objectArray finds the reply's JSON array of objects and splits it. line is
// where the array starts.
func objectArray(text string) (objs []jsonObj, line int, err error) {
	r, err := newReply(text)
	if err != nil {
		return nil, 0, err
	}
	span, off, err := findJSON(r, '[', acceptObjectArray)
	if err != nil {
		return nil, 0, err
	}
	objs, err = splitObjects(r, span, off)
	return objs, r.lineAt(off), err
}

func splitObjects(r reply, span string, off int) ([]jsonObj, error) {
	var objs []jsonObj
	err := jsonscan.EachElement([]byte(span), func(elem []byte, at int) error {
		o, err := decodeObject(elem, r.lineAt(off+at), len(objs)+1)
		if err != nil {
			return err
		}
		objs = append(objs, o)
		return nil
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		return nil, parseErr(r.lineAt(off), len(objs)+1, "", "reading the JSON array: %v", err)
	}
	return objs, err
}

// decodeObject decodes one JSON object, folding keys to lower case and
// rejecting a key given twice. Its values are slices of raw.
func decodeObject(raw []byte, line, item int) (jsonObj, error) {
	o := jsonObj{fields: make(members, 0, 8), line: line, item: item}
	if p := jsonscan.SkipSpace(raw, 0); p >= len(raw) || raw[p] != '{' {
		return o, parseErr(line, item, "", "expected a JSON object")
	}
	var seen map[string]bool // once the object is large
	err := jsonscan.EachMember(raw, func(key string, val []byte) error {
		lk := strings.ToLower(key)
		dup := false
		switch {
		case seen != nil:
			dup = seen[lk]
		case len(o.fields) < indexAfter:
			_, dup = o.fields.get(lk)
		default:
			seen = make(map[string]bool, 2*indexAfter)
			for _, m := range o.fields {
				seen[m.key] = true
			}
			dup = seen[lk]
		}
		if dup {
			return parseErr(line, item, key, "the key is given twice")
		}
		if seen != nil {
			seen[lk] = true
		}
		o.fields = append(o.fields, member{lk, val})
		return nil
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		return o, parseErr(line, item, "", "reading a JSON object: %v", err)
	}
	return o, err
}

// text reads a non-empty JSON string, trimmed.
func (o jsonObj) text(name string) (string, error) {
	v, err := o.value(name)
	if err != nil {
		return "", err
	}
	if v[0] != '"' {
		return "", o.fieldErr(name, "must be a JSON string, got %s", describeJSON(v))
	}
	s, ok := jsonscan.Unquote(v)
	if !ok {
		return "", o.fieldErr(name, "%v", jsonscan.ErrNotJSON)
	}
	if s = strings.TrimSpace(s); s == "" {
		return "", o.fieldErr(name, "is empty")
	}
	return s, nil
}

// number reads a finite JSON number.
func (o jsonObj) number(name string) (float64, error) {
	v, err := o.value(name)
	if err != nil {
		return 0, err
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		return 0, o.fieldErr(name, "must be a JSON number, got %s", describeJSON(v))
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, o.fieldErr(name, "must be a finite number, got %s", v)
	}
	return f, nil
}

// texts reads a JSON array of at least least non-empty strings, trimmed.
func (o jsonObj) texts(name string, least int) ([]string, error) {
	v, err := o.value(name)
	if err != nil {
		return nil, err
	}
	if v[0] != '[' {
		return nil, o.fieldErr(name, "must be a JSON array of strings, got %s", describeJSON(v))
	}
	var out []string
	err = jsonscan.EachElement(v, func(e []byte, _ int) error {
		s, ok := "", false
		if e[0] == '"' {
			s, ok = jsonscan.Unquote(e)
		}
		if !ok {
			return o.fieldErr(fmt.Sprintf("%s[%d]", name, len(out)), "must be a JSON string, got %s", describeJSON(e))
		}
		if s = strings.TrimSpace(s); s == "" {
			return o.fieldErr(fmt.Sprintf("%s[%d]", name, len(out)), "is empty")
		}
		out = append(out, s)
		return nil
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		return nil, o.fieldErr(name, "must be a JSON array of strings, got %s", describeJSON(v))
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []string{}
	}
	if len(out) < least {
		return nil, o.fieldErr(name, "has %d entries; at least %d are required", len(out), least)
	}
	return out, nil
}

// objects reads a JSON array of objects.
func (o jsonObj) objects(name string) ([]jsonObj, error) {
	v, err := o.value(name)
	if err != nil {
		return nil, err
	}
	if v[0] != '[' {
		return nil, o.fieldErr(name, "must be a JSON array of objects, got %s", describeJSON(v))
	}
	var out []jsonObj
	err = jsonscan.EachElement(v, func(e []byte, _ int) error {
		path := fmt.Sprintf("%s[%d]", o.field(name), len(out))
		if e[0] != '{' {
			return parseErr(o.line, 0, path, "must be a JSON object, got %s", describeJSON(e))
		}
		jo, err := decodeObject(e, o.line, 0)
		if err != nil {
			if pe, ok := err.(*ParseError); ok {
				pe.Field = path + fieldSuffix(pe.Field)
			}
			return err
		}
		out = append(out, jo.at(path))
		return nil
	})
	if errors.Is(err, jsonscan.ErrNotJSON) {
		return nil, o.fieldErr(name, "must be a JSON array of objects, got %s", describeJSON(v))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
