package prompts

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"text/template"
	"text/template/parse"
)

// The fast path: a section's parse tree compiled into a program for the
// subset of text/template the templates use (text, field chains from dot
// or a variable, if/else, range over slices with up to two variables, join,
// inc, len, eq and gt on ints and strings). It evaluates with reflection but
// resolves each struct field once per type and calls the functions
// directly. A tree with anything else is not compiled, and a render that
// meets anything the program does not reproduce exactly (a nil pointer, a
// map, a promoted field, a Stringer, an error) is discarded and
// done again by text/template, so text/template stays the reference: the
// output, and every error, are its own.

// program is a compiled section.
type program struct {
	steps []step
	slots int // variables: $ and those declared by ranges
}

type stepKind uint8

const (
	stepText  stepKind = iota
	stepPrint          // {{cmd}}
	stepIf             // {{if cmd}}body{{else}}alt{{end}}
	stepRange          // {{range $index, $elem := cmd}}body{{else}}alt{{end}}
)

// step is one node of a program.
type step struct {
	kind        stepKind
	text        []byte
	cmd         *command
	body, alt   []step
	index, elem int // range: the slots of its variables, -1 when not declared
}

type function uint8

const (
	fnValue function = iota // no function: the value of args[0]
	fnJoin
	fnInc
	fnLen
	fnEq
	fnGt
)

// command is a function with its arguments, or a value alone.
type command struct {
	fn   function
	args []operand
}

// operand is an argument: a value of the data (ref set) or a constant.
type operand struct {
	ref   *ref
	konst scalar
}

// scalar is a constant or a compared value: a string or an int.
type scalar struct {
	isString bool
	s        string
	n        int64
}

// ref is a value of the data: dot (slot -1) or a variable, then fields.
type ref struct {
	slot   int
	fields []*fieldSite
}

// fieldSite is one ".Name" of a template with the field index it had in
// the last struct type it was evaluated on; concurrent renders share it.
type fieldSite struct {
	name string
	last atomic.Pointer[fieldIndex]
}

// fieldIndex is where a name is in a struct type; index is -1 when the
// type has no exported field of that name at depth 0 (see plainField).
type fieldIndex struct {
	typ   reflect.Type
	index int
}

// compile is the program of t, or nil when t uses anything outside the
// subset.
func compile(t *template.Template) *program {
	if t.Tree == nil || t.Tree.Root == nil {
		return nil
	}
	c := &compiler{vars: []string{"$"}, slots: 1}
	steps, ok := c.list(t.Tree.Root)
	if !ok {
		return nil
	}
	return &program{steps: steps, slots: c.slots}
}

// compiler holds the variables in scope: vars[i] is the name in slot i.
type compiler struct {
	vars  []string
	slots int
}

func (c *compiler) list(l *parse.ListNode) ([]step, bool) {
	if l == nil {
		return nil, true
	}
	steps := make([]step, 0, len(l.Nodes))
	for _, n := range l.Nodes {
		var s step
		ok := true
		switch n := n.(type) {
		case *parse.TextNode:
			s = step{kind: stepText, text: n.Text}
		case *parse.CommentNode:
			continue
		case *parse.ActionNode:
			s.kind = stepPrint
			s.cmd, ok = c.pipe(n.Pipe, fnValue, fnJoin, fnInc, fnLen, fnEq, fnGt)
		case *parse.IfNode:
			s, ok = c.ifStep(n)
		case *parse.RangeNode:
			s, ok = c.rangeStep(n)
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
		steps = append(steps, s)
	}
	return steps, true
}

func (c *compiler) ifStep(n *parse.IfNode) (step, bool) {
	cmd, ok := c.pipe(n.Pipe, fnValue, fnInc, fnLen, fnEq, fnGt)
	if !ok {
		return step{}, false
	}
	return c.branches(step{kind: stepIf, cmd: cmd}, n.List, n.ElseList)
}

func (c *compiler) branches(s step, body, alt *parse.ListNode) (step, bool) {
	var ok1, ok2 bool
	s.body, ok1 = c.list(body)
	s.alt, ok2 = c.list(alt)
	return s, ok1 && ok2
}

// rangeStep compiles a range; its variables are in scope in its body and
// its else branch, as the parser has them.
func (c *compiler) rangeStep(n *parse.RangeNode) (step, bool) {
	decl := n.Pipe.Decl
	if n.Pipe.IsAssign || len(decl) > 2 || len(n.Pipe.Cmds) != 1 {
		return step{}, false
	}
	cmd, ok := c.command(n.Pipe.Cmds[0], fnValue)
	if !ok {
		return step{}, false
	}
	s := step{kind: stepRange, cmd: cmd, index: -1, elem: -1}
	scope := len(c.vars)
	defer func() { c.vars = c.vars[:scope] }()
	for _, d := range decl {
		c.vars = append(c.vars, d.Ident[0])
		c.slots = max(c.slots, len(c.vars))
	}
	switch len(decl) {
	case 1:
		s.elem = scope
	case 2:
		s.index, s.elem = scope, scope+1
	}
	return c.branches(s, n.List, n.ElseList)
}

// pipe compiles a pipeline of one command without declarations, calling
// one of the functions allowed.
func (c *compiler) pipe(p *parse.PipeNode, allowed ...function) (*command, bool) {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 {
		return nil, false
	}
	return c.command(p.Cmds[0], allowed...)
}

// functionOf is the function a template names and the number of
// arguments it takes; false for one the program does not run.
func functionOf(name string) (fn function, args int, ok bool) {
	switch name {
	case "join":
		return fnJoin, 2, true
	case "inc":
		return fnInc, 1, true
	case "len":
		return fnLen, 1, true
	case "eq":
		return fnEq, 2, true
	case "gt":
		return fnGt, 2, true
	}
	return fnValue, 0, false
}

func (c *compiler) command(cmd *parse.CommandNode, allowed ...function) (*command, bool) {
	out := &command{fn: fnValue}
	args := cmd.Args
	if id, ok := args[0].(*parse.IdentifierNode); ok {
		fn, n, known := functionOf(id.Ident)
		if !known || len(args)-1 != n {
			return nil, false
		}
		out.fn, args = fn, args[1:]
	} else if len(args) != 1 {
		return nil, false
	}
	if !contains(allowed, out.fn) {
		return nil, false
	}
	for _, a := range args {
		o, ok := c.operand(a)
		if !ok {
			return nil, false
		}
		out.args = append(out.args, o)
	}
	return out, out.checkConstants()
}

func contains(fns []function, f function) bool {
	for _, g := range fns {
		if g == f {
			return true
		}
	}
	return false
}

// checkConstants keeps constants where the program reproduces their
// conversion: a string as join's separator, ints and strings in eq and gt.
func (c *command) checkConstants() bool {
	for i, a := range c.args {
		if a.ref != nil {
			continue
		}
		switch {
		case c.fn == fnJoin && i == 1 && a.konst.isString:
		case c.fn == fnEq || c.fn == fnGt:
		default:
			return false
		}
	}
	return true
}

func (c *compiler) operand(n parse.Node) (operand, bool) {
	switch n := n.(type) {
	case *parse.DotNode:
		return operand{ref: &ref{slot: -1}}, true
	case *parse.FieldNode:
		return operand{ref: &ref{slot: -1, fields: sites(n.Ident)}}, true
	case *parse.VariableNode:
		for slot := len(c.vars) - 1; slot >= 0; slot-- {
			if c.vars[slot] == n.Ident[0] {
				return operand{ref: &ref{slot: slot, fields: sites(n.Ident[1:])}}, true
			}
		}
	case *parse.StringNode:
		return operand{konst: scalar{isString: true, s: n.Text}}, true
	case *parse.NumberNode:
		// A decimal (or octal, binary, hex without e/p) integer is an int to
		// text/template; other constants are left to it.
		if n.IsInt && !n.IsComplex && !strings.ContainsAny(n.Text, ".eEpP'") {
			return operand{konst: scalar{n: n.Int64}}, int64(int(n.Int64)) == n.Int64
		}
	}
	return operand{}, false
}

func sites(names []string) []*fieldSite {
	out := make([]*fieldSite, len(names))
	for i, name := range names {
		out[i] = &fieldSite{name: name}
	}
	return out
}

// run is the state of one execution of a program. A method returning
// false means the program cannot reproduce text/template here.
type run struct {
	buf  *bytes.Buffer
	vars []reflect.Value
}

// execute writes p's output for data to buf; false when text/template must
// render it instead (buf then holds a partial output to discard).
func (p *program) execute(buf *bytes.Buffer, data any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false // a case reflection refused: text/template's to handle
		}
	}()
	var small [4]reflect.Value // the variables of a template that declares few, kept off the heap
	r := run{buf: buf, vars: small[:]}
	if p.slots > len(small) {
		r.vars = make([]reflect.Value, p.slots)
	}
	r.vars[0] = reflect.ValueOf(data)
	return r.walk(p.steps, r.vars[0])
}

func (r *run) walk(steps []step, dot reflect.Value) bool {
	for i := range steps {
		s := &steps[i]
		ok := true
		switch s.kind {
		case stepText:
			r.buf.Write(s.text)
		case stepPrint:
			ok = r.print(s.cmd, dot)
		case stepIf:
			var truth bool
			if truth, ok = r.test(s.cmd, dot); ok {
				ok = r.walk(pick(truth, s.body, s.alt), dot)
			}
		case stepRange:
			ok = r.walkRange(s, dot)
		}
		if !ok {
			return false
		}
	}
	return true
}

func pick(truth bool, body, alt []step) []step {
	if truth {
		return body
	}
	return alt
}

// walkRange ranges over a slice or an array. The variables hold the
// ranged value until the first element, as text/template's do (its else
// branch sees them so).
func (r *run) walkRange(s *step, dot reflect.Value) bool {
	v, ok := r.value(s.cmd.args[0].ref, dot)
	if !ok {
		return false
	}
	for _, slot := range []int{s.index, s.elem} {
		if slot >= 0 {
			r.vars[slot] = v
		}
	}
	seq, ok := indirect(v)
	if !ok || (seq.Kind() != reflect.Slice && seq.Kind() != reflect.Array) {
		return false
	}
	if seq.Len() == 0 {
		return r.walk(s.alt, dot)
	}
	for i := range seq.Len() {
		elem := seq.Index(i)
		if s.elem >= 0 {
			r.vars[s.elem] = elem
		}
		if s.index >= 0 {
			r.vars[s.index] = reflect.ValueOf(i)
		}
		if !r.walk(s.body, elem) {
			return false
		}
	}
	return true
}

// print writes a command's result as text/template prints it.
func (r *run) print(c *command, dot reflect.Value) bool {
	switch c.fn {
	case fnValue:
		v, ok := r.value(c.args[0].ref, dot)
		return ok && r.writeValue(v)
	case fnJoin:
		return r.writeJoin(c, dot)
	}
	n, truth, isBool, ok := r.call(c, dot)
	switch {
	case !ok:
		return false
	case isBool:
		r.buf.WriteString(strconv.FormatBool(truth))
	default:
		r.buf.Write(strconv.AppendInt(r.buf.AvailableBuffer(), int64(n), 10))
	}
	return true
}

// test is the truth of a command as {{if}} takes it (template.IsTrue).
func (r *run) test(c *command, dot reflect.Value) (truth, ok bool) {
	if c.fn != fnValue {
		n, truth, isBool, ok := r.call(c, dot)
		return truth || (!isBool && n != 0), ok
	}
	v, ok := r.value(c.args[0].ref, dot)
	if !ok {
		return false, false
	}
	return isTrue(v)
}

// call runs inc or len (a number) or eq or gt (a truth).
func (r *run) call(c *command, dot reflect.Value) (n int, truth, isBool, ok bool) {
	switch c.fn {
	case fnInc:
		v, ok := r.value(c.args[0].ref, dot)
		if !ok || v.Type() != reflect.TypeFor[int]() {
			return 0, false, false, false
		}
		return int(v.Int()) + 1, false, false, true
	case fnLen:
		n, ok := r.length(c.args[0].ref, dot)
		return n, false, false, ok
	}
	a, ok1 := r.scalar(c.args[0], dot)
	b, ok2 := r.scalar(c.args[1], dot)
	if !ok1 || !ok2 || a.isString != b.isString {
		return 0, false, true, false
	}
	if c.fn == fnEq {
		return 0, a == b, true, true
	}
	return 0, (a.isString && a.s > b.s) || (!a.isString && a.n > b.n), true, true
}

func (r *run) length(ref *ref, dot reflect.Value) (int, bool) {
	v, ok := r.value(ref, dot)
	if ok {
		v, ok = indirect(v)
	}
	switch {
	case !ok:
		return 0, false
	case v.Kind() == reflect.Slice, v.Kind() == reflect.Array, v.Kind() == reflect.String, v.Kind() == reflect.Map:
		return v.Len(), true
	}
	return 0, false
}

// scalar is an operand of eq or gt: a constant, or a value of an int or
// string kind (inside an interface or not).
func (r *run) scalar(o operand, dot reflect.Value) (scalar, bool) {
	if o.ref == nil {
		return o.konst, true
	}
	v, ok := r.value(o.ref, dot)
	if ok && v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch {
	case !ok:
	case v.Kind() == reflect.String:
		return scalar{isString: true, s: v.String()}, true
	case v.CanInt():
		return scalar{n: v.Int()}, true
	}
	return scalar{}, false
}

// writeJoin writes strings.Join of a []string and a separator.
func (r *run) writeJoin(c *command, dot reflect.Value) bool {
	elems, ok := r.value(c.args[0].ref, dot)
	if !ok || elems.Type() != reflect.TypeFor[[]string]() {
		return false
	}
	sep := c.args[1].konst.s
	if ref := c.args[1].ref; ref != nil {
		v, ok := r.value(ref, dot)
		if !ok || v.Type() != reflect.TypeFor[string]() {
			return false
		}
		sep = v.String()
	}
	for i := range elems.Len() {
		if i > 0 {
			r.buf.WriteString(sep)
		}
		r.buf.WriteString(elems.Index(i).String())
	}
	return true
}

// value is a ref's value: dot or a variable, then each field in turn.
func (r *run) value(ref *ref, dot reflect.Value) (reflect.Value, bool) {
	v := dot
	if ref.slot >= 0 {
		v = r.vars[ref.slot]
	}
	for _, f := range ref.fields {
		var ok bool
		if v, ok = f.of(v); !ok {
			return v, false
		}
	}
	return v, v.IsValid()
}

// of is the field of v (a struct, or a non-nil pointer or interface to
// one) that the site names.
func (f *fieldSite) of(v reflect.Value) (reflect.Value, bool) {
	v, ok := indirect(v)
	if !ok || v.Kind() != reflect.Struct {
		return v, false
	}
	typ := v.Type()
	last := f.last.Load()
	if last == nil || last.typ != typ {
		last = &fieldIndex{typ: typ, index: plainField(typ, f.name)}
		f.last.Store(last)
	}
	if last.index < 0 {
		return v, false
	}
	return v.Field(last.index), true
}

// plainField is the index of the exported field name of struct type typ
// when it is not promoted from an embedded struct; -1 otherwise.
// text/template looks for a method of that name first, but Go allows no
// method and field of one name at one depth and a shallower field hides a
// method, so a field at depth 0 is never behind a method.
func plainField(typ reflect.Type, name string) int {
	f, ok := typ.FieldByName(name)
	if !ok || !f.IsExported() || len(f.Index) != 1 {
		return -1
	}
	return f.Index[0]
}

// indirect follows pointers and interfaces; false at a nil one.
func indirect(v reflect.Value) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return v, false
		}
		v = v.Elem()
	}
	return v, v.IsValid()
}

// isTrue is template.IsTrue for the kinds the program takes.
func isTrue(v reflect.Value) (truth, ok bool) {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return false, true
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool(), true
	case reflect.String, reflect.Slice, reflect.Array, reflect.Map:
		return v.Len() > 0, true
	case reflect.Pointer:
		return !v.IsNil(), true
	case reflect.Struct:
		return true, true
	}
	switch {
	case v.CanInt():
		return v.Int() != 0, true
	case v.CanUint():
		return v.Uint() != 0, true
	case v.CanFloat():
		return v.Float() != 0, true
	}
	return false, false
}

var (
	errorType    = reflect.TypeFor[error]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
)

// writeValue prints v as text/template does (fmt.Fprint) for the kinds
// whose printing it reproduces: strings, bools, ints, uints and floats of
// types without a String or Error method.
func (r *run) writeValue(v reflect.Value) bool {
	if v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer || !plainType(v.Type()) {
		return false
	}
	b := r.buf.AvailableBuffer()
	switch k := v.Kind(); {
	case k == reflect.String:
		r.buf.WriteString(v.String())
		return true
	case k == reflect.Bool:
		b = strconv.AppendBool(b, v.Bool())
	case v.CanInt():
		b = strconv.AppendInt(b, v.Int(), 10)
	case v.CanUint() && k != reflect.Uintptr:
		b = strconv.AppendUint(b, v.Uint(), 10)
	case v.CanFloat():
		b = strconv.AppendFloat(b, v.Float(), 'g', -1, v.Type().Bits())
	default:
		return false
	}
	r.buf.Write(b)
	return true
}

// plainType: fmt prints a value of typ by its kind, not by a method.
func plainType(typ reflect.Type) bool {
	if typ.PkgPath() == "" {
		return true // predeclared or unnamed: no methods
	}
	ptr := reflect.PointerTo(typ)
	return !ptr.Implements(errorType) && !ptr.Implements(stringerType)
}
