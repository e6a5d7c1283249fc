// Package jsonmode constrains generation to one JSON object (the OpenAI
// API's response_format {"type": "json_object"}) or to a text valid under
// a JSON Schema ("json_schema", schema.go): byte-level recognizers of
// their prefixes (RFC 8259), and a sampler constraint that lets a token
// through only when its bytes keep the text such a prefix, and only an
// end-of-generation token once the value is complete.
package jsonmode

import (
	"strings"
	"unicode/utf8"

	"github.com/damascus-llm/damascus/model/sample"
)

// MaxIndent is the most spaces and tabs after a newline. Between two
// tokens of JSON the whitespace is one space, or a newline and an indent
// of MaxIndent at most (llama.cpp's JSON grammar: ws ::= | " " |
// "\n" [ \t]{0,20}): a model cannot fill its budget with blanks.
const MaxIndent = 20

// MaxDepth is the deepest nesting of objects and arrays accepted.
const MaxDepth = 64

// A State is a recognizer of JSON text: one object, with nothing before or
// after it. Its zero value is the state before any byte. A State is a few
// words (the open containers are bits), so trying a token on a copy is
// cheap.
type State struct {
	objects uint64 // bit i: container i (outermost 0) is an object, else an array
	depth   int
	// mode is what the next byte may be; sub is its position in a literal,
	// a number's part or a \u escape; utf8 the continuation bytes a string
	// still owes; ws the whitespace bytes in a row.
	mode mode
	sub  int
	utf8 int // continuation bytes owed; the next one within [lo, hi]
	lo   byte
	hi   byte
	ws   int
	done bool // the top-level object is closed
	bad  bool // a byte broke the grammar: every later byte is refused
}

type mode uint8

const (
	mTop      mode = iota // before the top-level '{'
	mKeyOrEnd             // after '{': a key or '}'
	mKey                  // after ',' in an object: a key
	mColon                // after a key
	mValue                // after ':' or ',' in an array: a value
	mValOrEnd             // after '[': a value or ']'
	mAfter                // after a value: ',' or the container's end
	mString               // inside a string (sub: 1 a key)
	mEscape               // after '\'
	mUnicode              // after '\u', sub hex digits read
	mLiteral              // inside true/false/null (lit, sub bytes read)
	mNumber               // inside a number (num is its part)
	mDone                 // after the top-level object
)

// literal is the rest of true, false or null after its first byte.
var literals = [...]string{"true", "false", "null"}

// number parts
const (
	nMinus  = iota // after '-': a digit
	nZero          // after a leading 0: '.', 'e' or the end
	nInt           // in the integer part
	nDot           // after '.': a digit
	nFrac          // in the fraction
	nExp           // after 'e': a sign or a digit
	nExpSgn        // after the exponent's sign: a digit
	nExpDig        // in the exponent
)

// Done reports whether the top-level object is complete.
func (s *State) Done() bool { return s.done && !s.bad }

// Failed reports whether a byte broke the grammar.
func (s *State) Failed() bool { return s.bad }

// WriteString advances s over p and reports whether the text is still a
// prefix of a JSON object (after it is done, no byte is).
func (s *State) WriteString(p string) bool {
	for i := 0; i < len(p); i++ {
		if !s.step(p[i]) {
			s.bad = true
			return false
		}
	}
	return !s.bad
}

func isWS(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isHex(b byte) bool { return isDigit(b) || (b|0x20 >= 'a' && b|0x20 <= 'f') }

// space takes whitespace byte b where the grammar allows whitespace.
func (s *State) space(b byte) bool {
	var ok bool
	s.ws, ok = wsStep(s.ws, b)
	return ok
}

// wsStep is the whitespace rule on byte b after ws (0: none yet in this
// run; -1: a single space, closed; n > 0: a newline and n-1 indent bytes).
func wsStep(ws int, b byte) (int, bool) {
	switch {
	case ws == 0 && b == ' ':
		return -1, true
	case ws == 0 && b == '\n':
		return 1, true
	case ws > 0 && (b == ' ' || b == '\t') && ws <= MaxIndent:
		return ws + 1, true
	}
	return ws, false
}

func (s *State) step(b byte) bool {
	if s.bad {
		return false
	}
	switch s.mode {
	case mString:
		return s.stringByte(b)
	case mEscape:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.mode = mString
			return true
		case 'u':
			s.mode, s.sub = mUnicode, 0
			return true
		}
		return false
	case mUnicode:
		if !isHex(b) {
			return false
		}
		if s.sub++; s.sub == 4 {
			s.mode = mString
		}
		return true
	case mLiteral:
		lit := literals[s.sub>>8]
		i := s.sub & 0xff
		if b != lit[i] {
			return false
		}
		if i+1 == len(lit) {
			s.valueEnd()
		} else {
			s.sub++
		}
		return true
	case mNumber:
		if s.numberByte(b) {
			return true
		}
		// The number ends here if it may; the byte is then read after it.
		if s.sub != nZero && s.sub != nInt && s.sub != nFrac && s.sub != nExpDig {
			return false
		}
		s.valueEnd()
		return s.step(b)
	}
	if isWS(b) {
		if s.mode == mDone || s.mode == mTop {
			return false // the answer is the object alone
		}
		return s.space(b)
	}
	s.ws = 0
	switch s.mode {
	case mTop:
		if b != '{' {
			return false
		}
		return s.open(b)
	case mKeyOrEnd, mKey:
		if b == '}' && s.mode == mKeyOrEnd {
			return s.close(b)
		}
		if b != '"' {
			return false
		}
		s.mode, s.sub = mString, 1
		return true
	case mColon:
		if b != ':' {
			return false
		}
		s.mode = mValue
		return true
	case mValue, mValOrEnd:
		if b == ']' && s.mode == mValOrEnd {
			return s.close(b)
		}
		return s.valueStart(b)
	case mAfter:
		object := s.objects>>(s.depth-1)&1 == 1
		switch {
		case b == ',' && object:
			s.mode = mKey
			return true
		case b == ',':
			s.mode = mValue
			return true
		case b == '}' && object, b == ']' && !object:
			return s.close(b)
		}
		return false
	}
	return false // mDone: nothing after the object
}

// valueStart begins a value with b.
func (s *State) valueStart(b byte) bool {
	switch {
	case b == '{' || b == '[':
		return s.open(b)
	case b == '"':
		s.mode, s.sub = mString, 0
		return true
	case b == 't':
		s.mode, s.sub = mLiteral, 0<<8|1
		return true
	case b == 'f':
		s.mode, s.sub = mLiteral, 1<<8|1
		return true
	case b == 'n':
		s.mode, s.sub = mLiteral, 2<<8|1
		return true
	case b == '-':
		s.mode, s.sub = mNumber, nMinus
		return true
	case b == '0':
		s.mode, s.sub = mNumber, nZero
		return true
	case isDigit(b):
		s.mode, s.sub = mNumber, nInt
		return true
	}
	return false
}

func (s *State) numberByte(b byte) bool {
	switch s.sub {
	case nMinus:
		switch {
		case b == '0':
			s.sub = nZero
		case isDigit(b):
			s.sub = nInt
		default:
			return false
		}
		return true
	case nZero, nInt:
		switch {
		case isDigit(b) && s.sub == nInt:
		case b == '.':
			s.sub = nDot
		case b == 'e' || b == 'E':
			s.sub = nExp
		default:
			return false
		}
		return true
	case nDot, nFrac:
		switch {
		case isDigit(b):
			s.sub = nFrac
		case (b == 'e' || b == 'E') && s.sub == nFrac:
			s.sub = nExp
		default:
			return false
		}
		return true
	case nExp:
		switch {
		case b == '+' || b == '-':
			s.sub = nExpSgn
		case isDigit(b):
			s.sub = nExpDig
		default:
			return false
		}
		return true
	case nExpSgn, nExpDig:
		if !isDigit(b) {
			return false
		}
		s.sub = nExpDig
		return true
	}
	return false
}

// stringByte reads b inside a string: UTF-8 well formed, no control bytes.
func (s *State) stringByte(b byte) bool {
	if s.utf8 > 0 {
		if b < s.lo || b > s.hi {
			return false
		}
		s.utf8--
		s.lo, s.hi = 0x80, 0xbf
		return true
	}
	switch {
	case b == '"':
		if s.sub == 1 {
			s.mode = mColon
		} else {
			s.valueEnd()
		}
		return true
	case b == '\\':
		s.mode = mEscape
		return true
	case b < 0x20:
		return false
	case b < 0x80:
		return true
	case b >= 0xc2 && b <= 0xdf:
		s.utf8 = 1
	case b >= 0xe0 && b <= 0xef:
		s.utf8 = 2
	case b >= 0xf0 && b <= 0xf4:
		s.utf8 = 3
	default:
		return false
	}
	// The second byte's range excludes overlong forms, surrogates and code
	// points past U+10FFFF (RFC 3629).
	s.lo, s.hi = 0x80, 0xbf
	switch b {
	case 0xe0:
		s.lo = 0xa0
	case 0xed:
		s.hi = 0x9f
	case 0xf0:
		s.lo = 0x90
	case 0xf4:
		s.hi = 0x8f
	}
	return true
}

func (s *State) open(b byte) bool {
	if s.depth == MaxDepth {
		return false
	}
	s.objects &^= 1 << s.depth
	s.mode = mValOrEnd
	if b == '{' {
		s.objects |= 1 << s.depth
		s.mode = mKeyOrEnd
	}
	s.depth++
	return true
}

func (s *State) close(byte) bool {
	s.depth--
	s.valueEnd()
	return true
}

// valueEnd is the state after a complete value.
func (s *State) valueEnd() {
	s.ws = 0
	if s.depth == 0 {
		s.mode, s.done = mDone, true
		return
	}
	s.mode = mAfter
}

// Vocab is what a Table reads of the tokenizer.
type Vocab = sample.Vocab

// A Table is a vocabulary read once for every Constraint over it: each
// token's bytes, whether it ends generation, and whether its bytes may
// stand anywhere inside a string (printable, no quote or backslash, whole
// UTF-8), so that most tokens are let through a string without a walk.
type Table struct {
	pieces []string
	eog    []bool
	plain  []bool
}

// NewTable reads the tokens 0..n-1 of v (n the model's logits, which may
// exceed the tokenizer's tokens: those have no text and are refused).
func NewTable(v Vocab, n int) *Table {
	t := &Table{plain: make([]bool, n)}
	t.pieces, t.eog = sample.Pieces(v, n)
	for id, p := range t.pieces {
		t.plain[id] = p != "" && utf8.ValidString(p) && !strings.ContainsAny(p, "\"\\") && !hasControl(p)
	}
	return t
}

func hasControl(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 {
			return true
		}
	}
	return false
}

// A Constraint lets the sampler pick only tokens that keep the generated
// text a prefix of one JSON object (or of a text valid under one of a
// Union's schemas), and once it is complete only a token that ends
// generation (sample.Constraint). Tokens without text (control tokens)
// are refused before then.
type Constraint struct {
	t      *Table
	st     State      // JSON mode
	schema bool       // a union's: us, with trial the scratch of Allows
	us     UnionState // of a union of schemas
	trial  SchemaState
}

// New returns a JSON-mode constraint at the start of an answer.
func (t *Table) New() *Constraint { return &Constraint{t: t} }

// NewSchema returns a constraint to texts valid under s.
func (t *Table) NewSchema(s *Schema) *Constraint { return t.NewUnion(Union{s}) }

// NewUnion returns a constraint to texts valid under any of u's schemas.
func (t *Table) NewUnion(u Union) *Constraint {
	return &Constraint{t: t, schema: true, us: u.Start()}
}

// Allows reports whether token id may come next.
func (c *Constraint) Allows(id int) bool {
	t := c.t
	if id < 0 || id >= len(t.pieces) {
		return false
	}
	if t.eog[id] {
		return c.Done()
	}
	p := t.pieces[id]
	if p == "" || c.Done() || c.failed() {
		return false
	}
	if !c.schema {
		if t.plain[id] && c.st.mode == mString && c.st.utf8 == 0 {
			return true
		}
		s := c.st
		return s.WriteString(p)
	}
	for i := range c.us.live {
		ss := &c.us.live[i]
		if f := ss.top(); t.plain[id] && f.kind == fScalar && ss.scanner.mode == mString && ss.scanner.utf8 == 0 {
			return true
		}
		ss.copyInto(&c.trial)
		if c.trial.WriteString(p) {
			return true
		}
	}
	return false
}

func (c *Constraint) failed() bool {
	if c.schema {
		return len(c.us.live) == 0
	}
	return c.st.bad
}

// Accept advances the constraint over the token picked.
func (c *Constraint) Accept(id int) {
	if id < 0 || id >= len(c.t.pieces) || c.t.eog[id] {
		return
	}
	if c.schema {
		c.us.WriteString(c.t.pieces[id])
	} else {
		c.st.WriteString(c.t.pieces[id])
	}
}

// Done reports whether the answer is complete.
func (c *Constraint) Done() bool {
	if c.schema {
		return c.us.Done()
	}
	return c.st.Done()
}
