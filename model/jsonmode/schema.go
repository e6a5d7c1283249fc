package jsonmode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// A Schema is a JSON Schema compiled for generation: the subset that a
// prefix of the text can be checked against byte by byte. Supported:
// "type" (one or a list), "properties" with "required" (properties are
// written in the schema's order, an optional one may be left out, no
// other property is written: every text produced validates whatever
// "additionalProperties" says), "items" with "minItems" and "maxItems",
// "enum" and "const", "$ref" to the root's "$defs" or "definitions"
// (recursion included), "anyOf" and "oneOf" whose alternatives begin with
// different bytes (Optional[X] as Pydantic writes it: X or null), "allOf"
// of one schema, and the annotations (title, description, default,
// examples, ...) which do not change what is produced. Anything else
// (patterns, formats, numeric bounds, string lengths, alternatives that
// begin alike, ...) is refused by CompileSchema with the keyword named,
// rather than silently not enforced.
type Schema struct{ root *node }

// JSON types as bits of node.types.
const (
	tObject = 1 << iota
	tArray
	tString
	tNumber
	tInteger
	tBoolean
	tNull
)

var typeBits = map[string]uint8{"object": tObject, "array": tArray, "string": tString, "number": tNumber,
	"integer": tInteger, "boolean": tBoolean, "null": tNull}

type node struct {
	types    uint8
	hasProps bool   // "properties" given: objects hold those alone, else any
	props    []prop // objects: in the schema's order
	items    *node  // arrays: nil, any values
	minItems int
	maxItems int         // -1: no bound
	enum     []string    // canonical JSON texts of the allowed values; nil: any of types
	alts     []*node     // anyOf/oneOf: alternatives, told apart by their first byte
	first    [][4]uint64 // the bytes each alternative begins with
}

type prop struct {
	name     string // its JSON string's contents (escaped as JSON writes it)
	n        *node
	required bool
}

// maxProps bounds an object's properties (candidate sets are bits of a word).
const maxProps = 64

var annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "additionalProperties": true}

// CompileSchema compiles a JSON Schema (its supported subset: see Schema)
// whose root is an object or an array.
func CompileSchema(raw []byte) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("schema: text after the schema")
	}
	c := &compiler{root: v, refs: map[string]*node{}}
	n, err := c.compile(v, "#", 0)
	if err != nil {
		return nil, err
	}
	if n.enum != nil || n.types&^(tObject|tArray) != 0 || n.types == 0 {
		return nil, fmt.Errorf("schema: the root must be an object or an array (type \"object\" or \"array\")")
	}
	return &Schema{root: n}, nil
}

// compiler compiles one schema: its root (where references point) and the
// nodes of the references met so far (a recursive schema's cycle closes
// on them).
type compiler struct {
	root any
	refs map[string]*node
}

// ref compiles the definition a "$ref" names: "#/$defs/NAME" or
// "#/definitions/NAME" of the root.
func (c *compiler) ref(ref, at string, depth int) (*node, error) {
	if n, ok := c.refs[ref]; ok {
		return n, nil
	}
	var name, section string
	for _, sec := range []string{"$defs", "definitions"} {
		if rest, ok := strings.CutPrefix(ref, "#/"+sec+"/"); ok && !strings.Contains(rest, "/") {
			name, section = rest, sec
		}
	}
	root, _ := c.root.(*omap)
	if name == "" || root == nil {
		return nil, fmt.Errorf("schema %s: $ref %q: only #/$defs/NAME and #/definitions/NAME are supported", at, ref)
	}
	defs, _ := root.vals[section].(*omap)
	if defs == nil || defs.vals[name] == nil {
		return nil, fmt.Errorf("schema %s: $ref %q: no such definition", at, ref)
	}
	n := &node{} // filled below; a cycle back here meets it
	c.refs[ref] = n
	d, err := c.compile(defs.vals[name], ref, depth)
	if err != nil {
		return nil, err
	}
	*n = *d
	return n, nil
}

// firstBytes is the set of bytes a value of n may begin with; ok is false
// where n is a reference still being compiled (a cycle through anyOf).
func firstBytes(n *node) (set [4]uint64, ok bool) {
	add := func(b byte) { set[b>>6] |= 1 << (b & 63) }
	switch {
	case n.enum != nil:
		for _, e := range n.enum {
			add(e[0])
		}
	case n.alts != nil:
		for _, a := range n.alts {
			as, ok := firstBytes(a)
			if !ok {
				return set, false
			}
			for i := range set {
				set[i] |= as[i]
			}
		}
	case n.types == 0:
		return set, false
	}
	if n.enum == nil && n.alts == nil {
		for t, bs := range map[uint8]string{tObject: "{", tArray: "[", tString: `"`, tInteger: "-0123456789", tBoolean: "tf", tNull: "n"} {
			if n.types&t != 0 {
				for i := 0; i < len(bs); i++ {
					add(bs[i])
				}
			}
		}
	}
	return set, true
}

var structural = map[string]bool{"type": true, "properties": true, "required": true, "items": true,
	"minItems": true, "maxItems": true, "enum": true, "const": true}

func (c *compiler) compile(v any, at string, depth int) (*node, error) {
	if depth >= MaxDepth/2 {
		return nil, fmt.Errorf("schema %s: nested deeper than %d", at, MaxDepth/2)
	}
	if b, ok := v.(bool); ok && b {
		return anyValue, nil
	}
	om, ok := v.(*omap)
	if !ok {
		return nil, fmt.Errorf("schema %s: an object is wanted", at)
	}
	m := om.vals
	var combinator string
	for _, k := range om.keys {
		switch {
		case structural[k] || annotations[k]:
		case k == "$defs" || k == "definitions":
			if at != "#" {
				return nil, fmt.Errorf("schema %s: %s are read from the root only", at, k)
			}
		case k == "$ref" || k == "anyOf" || k == "oneOf" || k == "allOf":
			if combinator != "" {
				return nil, fmt.Errorf("schema %s: %s beside %s is not supported", at, k, combinator)
			}
			combinator = k
		default:
			return nil, fmt.Errorf("schema %s: %q is not supported (type, properties, required, items, minItems, maxItems, enum, const, $ref, anyOf, oneOf and a one-schema allOf are)", at, k)
		}
	}
	if combinator != "" {
		for _, k := range om.keys {
			if structural[k] {
				return nil, fmt.Errorf("schema %s: %s beside %q is not supported", at, combinator, k)
			}
		}
		return c.combine(combinator, m[combinator], at, depth)
	}
	n := &node{maxItems: -1}
	switch t := m["type"].(type) {
	case nil:
		n.types = anyValue.types
	case string:
		if n.types = typeBits[t]; n.types == 0 {
			return nil, fmt.Errorf("schema %s: type %q is not a JSON type", at, t)
		}
	case []any:
		for _, e := range t {
			s, _ := e.(string)
			if typeBits[s] == 0 {
				return nil, fmt.Errorf("schema %s: type %v is not a JSON type", at, e)
			}
			n.types |= typeBits[s]
		}
	default:
		return nil, fmt.Errorf("schema %s: type must be a string or a list of them", at)
	}
	if n.types&tNumber != 0 {
		n.types |= tInteger // every integer is a number
	}
	if e, ok := m["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 || len(list) > maxProps {
			return nil, fmt.Errorf("schema %s: enum must list 1 to %d values", at, maxProps)
		}
		for _, x := range list {
			b, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("schema %s: enum: %w", at, err)
			}
			n.enum = append(n.enum, string(b))
		}
	}
	if c, ok := m["const"]; ok {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("schema %s: const: %w", at, err)
		}
		n.enum = []string{string(b)}
	}
	if p, ok := m["properties"]; ok {
		po, ok := p.(*omap)
		if !ok || len(po.keys) > maxProps {
			return nil, fmt.Errorf("schema %s: properties must be an object of at most %d", at, maxProps)
		}
		props := po.vals
		n.hasProps = true
		required := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, x := range r {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("schema %s: required must list property names", at)
				}
				if _, ok := props[s]; !ok {
					return nil, fmt.Errorf("schema %s: required property %q is not among the properties", at, s)
				}
				required[s] = true
			}
		}
		for _, name := range po.keys { // the schema's order
			child, err := c.compile(props[name], at+"/properties/"+name, depth+1)
			if err != nil {
				return nil, err
			}
			enc, _ := json.Marshal(name)
			n.props = append(n.props, prop{name: string(enc[1 : len(enc)-1]), n: child, required: required[name]})
		}
	} else if _, ok := m["required"]; ok {
		return nil, fmt.Errorf("schema %s: required without properties", at)
	}
	if it, ok := m["items"]; ok {
		child, err := c.compile(it, at+"/items", depth+1)
		if err != nil {
			return nil, err
		}
		n.items = child
	}
	for key, dst := range map[string]*int{"minItems": &n.minItems, "maxItems": &n.maxItems} {
		if x, ok := m[key]; ok {
			num, ok := x.(json.Number)
			v, err := num.Int64()
			if !ok || err != nil || v < 0 || v > 1<<15 {
				return nil, fmt.Errorf("schema %s: %s must be a count", at, key)
			}
			*dst = int(v)
		}
	}
	if n.maxItems >= 0 && n.maxItems < n.minItems {
		return nil, fmt.Errorf("schema %s: maxItems %d is below minItems %d", at, n.maxItems, n.minItems)
	}
	return n, nil
}

// combine compiles a $ref, an anyOf or oneOf (alternatives that begin with
// different bytes, so the first byte of a value picks its alternative, and
// exactly one can match), or an allOf of one schema.
func (c *compiler) combine(kw string, v any, at string, depth int) (*node, error) {
	if kw == "$ref" {
		ref, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("schema %s: $ref must be a string", at)
		}
		return c.ref(ref, at, depth)
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("schema %s: %s must list schemas", at, kw)
	}
	if kw == "allOf" {
		if len(list) != 1 {
			return nil, fmt.Errorf("schema %s: allOf of %d schemas is not supported (of one is)", at, len(list))
		}
		return c.compile(list[0], at+"/allOf/0", depth+1)
	}
	n := &node{maxItems: -1}
	var seen [4]uint64
	for i, x := range list {
		a, err := c.compile(x, fmt.Sprintf("%s/%s/%d", at, kw, i), depth+1)
		if err != nil {
			return nil, err
		}
		fb, ok := firstBytes(a)
		if !ok {
			return nil, fmt.Errorf("schema %s/%s/%d: a reference back to itself is not supported here", at, kw, i)
		}
		for w := range seen {
			if seen[w]&fb[w] != 0 {
				return nil, fmt.Errorf("schema %s: %s alternatives must begin differently (alternative %d can begin as an earlier one: two objects, two strings, ...)", at, kw, i)
			}
			seen[w] |= fb[w]
		}
		n.alts = append(n.alts, a)
		n.first = append(n.first, fb)
		n.types |= a.types
	}
	return n, nil
}

// omap is a JSON object with its keys in the order of the text.
type omap struct {
	keys []string
	vals map[string]any
}

// MarshalJSON writes the object in its keys' order (an enum's objects are
// written as the schema gives them).
func (o *omap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeOrdered reads one JSON value, objects as *omap (a repeated key is
// an error), numbers as json.Number.
func decodeOrdered(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := &omap{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			if _, dup := o.vals[k]; dup {
				return nil, fmt.Errorf("key %q repeated", k)
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k)
			o.vals[k] = v
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	return t, nil
}

// Frames of a SchemaState's stack.
const (
	fValue  = iota // a value of n is next (whitespace first allowed)
	fObject        // inside an object
	fArray         // inside an array
	fEnum          // inside a value that must be one of n.enum
	fScalar        // inside a value the scanner reads: a string, number, literal, or an object or array without constraints
)

// Object phases.
const (
	oKeyOrEnd = iota // after '{'
	oKey             // after ','
	oInKey           // inside a key
	oColon           // after a key
	oAfter           // after a property's value
)

// Array phases.
const (
	aValOrEnd = iota // after '['
	aAfter           // after an item
)

type frame struct {
	n     *node
	kind  uint8
	phase uint8
	next  int    // object: the first property not yet written or passed; array: items so far
	prop  int    // object: the property whose value is being written
	pos   int    // object oInKey: key bytes matched; enum: bytes matched
	cand  uint64 // object oInKey: candidate properties; enum: candidate values
}

// A SchemaState recognizes prefixes of texts valid under a Schema.
type SchemaState struct {
	frames  []frame
	scanner State // the innermost scalar's (a string, number or literal)
	integer bool  // the scalar is a number that must be an integer
	ws      int
	done    bool
	bad     bool
}

// Start returns the state before the first byte.
func (s *Schema) Start() SchemaState {
	return SchemaState{frames: []frame{{n: s.root, kind: fValue}}}
}

// copyInto copies s into d, reusing d's stack.
func (s *SchemaState) copyInto(d *SchemaState) {
	frames := append(d.frames[:0], s.frames...)
	*d = *s
	d.frames = frames
}

// Done reports whether the value is complete.
func (s *SchemaState) Done() bool { return s.done && !s.bad }

// WriteString advances s over p and reports whether the text is still a
// prefix of a valid one.
func (s *SchemaState) WriteString(p string) bool {
	for i := 0; i < len(p); i++ {
		if s.bad || !s.step(p[i]) {
			s.bad = true
			return false
		}
	}
	return !s.bad
}

func (s *SchemaState) top() *frame { return &s.frames[len(s.frames)-1] }

// end pops the innermost frame, a value just completed, and moves its
// container past it.
func (s *SchemaState) end() {
	s.frames = s.frames[:len(s.frames)-1]
	s.ws = 0
	if len(s.frames) == 0 {
		s.done = true
		return
	}
	f := s.top()
	switch f.kind {
	case fObject:
		f.phase = oAfter
	case fArray:
		f.next++
		f.phase = aAfter
	}
}

func (s *SchemaState) space(b byte) bool {
	var ok bool
	s.ws, ok = wsStep(s.ws, b)
	return ok
}

func (s *SchemaState) step(b byte) bool {
	if s.done {
		return false
	}
	f := s.top()
	switch f.kind {
	case fScalar:
		sc := &s.scanner
		if sc.mode == mAfter && sc.depth == 1 { // the value closed before b
			s.end()
			return s.step(b)
		}
		if sc.mode == mNumber && sc.depth == 1 { // the value itself: it ends at the container's next byte
			if s.integer && (b == '.' || b == 'e' || b == 'E') {
				return false
			}
			t := *sc
			if t.numberByte(b) {
				sc.sub = t.sub
				return true
			}
			if sc.sub != nZero && sc.sub != nInt && sc.sub != nFrac && sc.sub != nExpDig {
				return false
			}
			s.end()
			return s.step(b)
		}
		return sc.step(b)
	case fEnum:
		var cand uint64
		complete := false
		for c := f.cand; c != 0; c &= c - 1 {
			i := bits.TrailingZeros64(c)
			e := f.n.enum[i]
			if f.pos < len(e) && e[f.pos] == b {
				cand |= 1 << i
			}
			complete = complete || f.pos == len(e)
		}
		if cand != 0 {
			f.cand, f.pos = cand, f.pos+1
			return true
		}
		if !complete {
			return false
		}
		s.end()
		return s.step(b)
	case fValue:
		if isWS(b) {
			return len(s.frames) > 1 && s.space(b)
		}
		s.ws = 0
		return s.begin(f, b)
	case fObject:
		return s.objectByte(f, b)
	case fArray:
		return s.arrayByte(f, b)
	}
	return false
}

// begin turns the pending value f into the frame its first byte b opens.
func (s *SchemaState) begin(f *frame, b byte) bool {
	n := f.n
	for n.alts != nil {
		i := slices.IndexFunc(n.first, func(fb [4]uint64) bool { return fb[b>>6]&(1<<(b&63)) != 0 })
		if i < 0 {
			return false
		}
		n = n.alts[i]
		f.n = n
	}
	if n.enum != nil {
		f.kind, f.pos, f.cand = fEnum, 0, 1<<len(n.enum)-1
		if len(n.enum) == 64 {
			f.cand = ^uint64(0)
		}
		return s.step(b)
	}
	switch {
	case b == '{' && n.types&tObject != 0 && n.hasProps:
		if len(s.frames) >= MaxDepth/2 {
			return false
		}
		f.kind, f.phase, f.next = fObject, oKeyOrEnd, 0
		return true
	case b == '[' && n.types&tArray != 0 && (n.items != nil || n.minItems > 0 || n.maxItems >= 0):
		if len(s.frames) >= MaxDepth/2 {
			return false
		}
		f.kind, f.phase, f.next = fArray, aValOrEnd, 0
		return true
	case b == '{' && n.types&tObject != 0, b == '[' && n.types&tArray != 0, // any object or array: the scanner's
		b == '"' && n.types&tString != 0,
		(b == '-' || isDigit(b)) && n.types&tInteger != 0,
		(b == 't' || b == 'f') && n.types&tBoolean != 0,
		b == 'n' && n.types&tNull != 0:
		f.kind = fScalar
		s.integer = n.types&tNumber == 0
		s.scanner = State{depth: 1, mode: mValue}
		return s.scanner.step(b)
	}
	return false
}

// candidates are the properties a key may name from property next on: up
// to and including the first required one.
func candidates(n *node, next int) uint64 {
	var c uint64
	for j := next; j < len(n.props); j++ {
		c |= 1 << j
		if n.props[j].required {
			break
		}
	}
	return c
}

// requiredLeft reports whether a required property remains from next on.
func requiredLeft(n *node, next int) bool {
	return slices.ContainsFunc(n.props[next:], func(p prop) bool { return p.required })
}

func (s *SchemaState) objectByte(f *frame, b byte) bool {
	n := f.n
	if f.phase == oInKey {
		if b == '"' {
			for c := f.cand; c != 0; c &= c - 1 {
				if j := bits.TrailingZeros64(c); len(n.props[j].name) == f.pos {
					f.prop, f.next, f.phase = j, j+1, oColon
					return true
				}
			}
			return false
		}
		var cand uint64
		for c := f.cand; c != 0; c &= c - 1 {
			j := bits.TrailingZeros64(c)
			if name := n.props[j].name; f.pos < len(name) && name[f.pos] == b {
				cand |= 1 << j
			}
		}
		f.cand, f.pos = cand, f.pos+1
		return cand != 0
	}
	if isWS(b) {
		return s.space(b)
	}
	s.ws = 0
	switch {
	case b == '"' && (f.phase == oKeyOrEnd || f.phase == oKey):
		f.cand, f.pos, f.phase = candidates(n, f.next), 0, oInKey
		return f.cand != 0
	case b == '}' && (f.phase == oKeyOrEnd || f.phase == oAfter):
		if requiredLeft(n, f.next) {
			return false
		}
		s.end()
		return true
	case b == ':' && f.phase == oColon:
		child := n.props[f.prop].n
		s.frames = append(s.frames, frame{n: child, kind: fValue})
		return true
	case b == ',' && f.phase == oAfter:
		if candidates(n, f.next) == 0 {
			return false
		}
		f.phase = oKey
		return true
	}
	return false
}

func (s *SchemaState) arrayByte(f *frame, b byte) bool {
	n := f.n
	if isWS(b) {
		return s.space(b)
	}
	s.ws = 0
	switch {
	case b == ']':
		if f.next < n.minItems {
			return false
		}
		s.end()
		return true
	case b == ',' && f.phase == aAfter:
		if n.maxItems >= 0 && f.next >= n.maxItems {
			return false
		}
		s.frames = append(s.frames, frame{n: itemsOf(n), kind: fValue})
		return true
	case f.phase == aValOrEnd:
		if n.maxItems == 0 {
			return false
		}
		s.frames = append(s.frames, frame{n: itemsOf(n), kind: fValue})
		return s.step(b)
	}
	return false
}

var anyValue = &node{types: tObject | tArray | tString | tNumber | tInteger | tBoolean | tNull, maxItems: -1}

func itemsOf(n *node) *node {
	if n.items == nil {
		return anyValue
	}
	return n.items
}
