// Package grammar constrains generation to a GBNF grammar, llama.cpp's
// format (grammars/README.md there): rules `name ::= alternatives`,
// string literals, character classes (ranges, negation, escapes), `.`,
// groups, and the repetitions *, +, ? and {m}, {m,}, {m,n}, {,n}. A
// Grammar is parsed once; a State recognizes prefixes of the texts the
// rule `root` derives, code point by code point, as a set of stacks (the
// positions still to match, innermost last), as llama.cpp's sampler does.
package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Element kinds.
const (
	eEnd  = iota // end of an alternative
	eChar        // one code point in ranges (or outside them, neg)
	eRule        // a reference to rule
)

type span struct{ lo, hi rune }

type elem struct {
	kind   uint8
	neg    bool
	ranges []span
	rule   int
}

// A Grammar is a parsed GBNF grammar. Its elements are one array: each
// alternative a run ending in an eEnd; a rule is its alternatives' starts.
type Grammar struct {
	elems []elem
	rules [][]int32 // rule → the starts of its alternatives
	names []string
	root  int
}

// maxRules bounds the rules a grammar (with those its repetitions make)
// may hold, and maxRepeat a bound {m,n}, so a request cannot ask for an
// unbounded expansion.
const (
	maxRules  = 4096
	maxRepeat = 1000
	maxElems  = 1 << 18
)

type parser struct {
	src   string
	pos   int
	g     *Grammar
	index map[string]int
	used  map[string]int // rule referenced → a position, for the error
	alts  [][][]elem     // rule → alternatives (elements without eEnd), before flattening
}

// Parse parses src, which must define the rule root.
func Parse(src string) (*Grammar, error) {
	p := &parser{src: src, g: &Grammar{}, index: map[string]int{}, used: map[string]int{}}
	p.space(true)
	for p.pos < len(p.src) {
		if err := p.rule(); err != nil {
			return nil, err
		}
		p.space(true)
	}
	root, ok := p.index["root"]
	if !ok {
		return nil, fmt.Errorf("grammar: no rule named root")
	}
	for name, at := range p.used {
		if p.alts[p.index[name]] == nil {
			return nil, fmt.Errorf("grammar: rule %q (used at byte %d) is not defined", name, at)
		}
	}
	g := p.g
	g.root = root
	for _, alts := range p.alts {
		var starts []int32
		for _, a := range alts {
			starts = append(starts, int32(len(g.elems)))
			g.elems = append(g.elems, a...)
			g.elems = append(g.elems, elem{kind: eEnd})
		}
		g.rules = append(g.rules, starts)
	}
	if len(g.elems) > maxElems {
		return nil, fmt.Errorf("grammar: %d elements (with repetitions expanded), more than %d", len(g.elems), maxElems)
	}
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return g, nil
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("grammar: byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// space skips blanks and comments, and newlines where newlines is set.
func (p *parser) space(newlines bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case (c == '\n' || c == '\r') && newlines:
			p.pos++
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// ruleIndex is name's rule, made (undefined) on first sight.
func (p *parser) ruleIndex(name string) (int, error) {
	if i, ok := p.index[name]; ok {
		return i, nil
	}
	if len(p.alts) >= maxRules {
		return 0, p.errorf("more than %d rules (with those repetitions make)", maxRules)
	}
	p.index[name] = len(p.alts)
	p.g.names = append(p.g.names, name)
	p.alts = append(p.alts, nil)
	return len(p.alts) - 1, nil
}

// newRule is an anonymous rule with alts (a group or a repetition).
func (p *parser) newRule(alts [][]elem) (int, error) {
	i, err := p.ruleIndex(fmt.Sprintf("#%d", len(p.alts)))
	if err != nil {
		return 0, err
	}
	if alts == nil {
		alts = [][]elem{}
	}
	p.alts[i] = alts
	return i, nil
}

func (p *parser) rule() error {
	name := p.name()
	if name == "" {
		return p.errorf("a rule name is wanted")
	}
	p.space(false)
	if !strings.HasPrefix(p.src[p.pos:], "::=") {
		return p.errorf("::= is wanted after rule name %q", name)
	}
	p.pos += 3
	p.space(true)
	alts, err := p.alternates(false)
	if err != nil {
		return err
	}
	i, err := p.ruleIndex(name)
	if err != nil {
		return err
	}
	if p.alts[i] != nil {
		return p.errorf("rule %q is defined twice", name)
	}
	p.alts[i] = alts
	if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
		return p.errorf("unexpected %q in rule %q", p.src[p.pos], name)
	}
	return nil
}

// alternates reads sequences separated by |; nested inside a group,
// where newlines are blanks.
func (p *parser) alternates(nested bool) ([][]elem, error) {
	var alts [][]elem
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			p.space(true)
			continue
		}
		return alts, nil
	}
}

func (p *parser) sequence(nested bool) ([]elem, error) {
	var seq []elem
	last := -1 // where the last item begins in seq, for a repetition
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		start := len(seq)
		switch {
		case c == '"':
			p.pos++
			for {
				if p.pos >= len(p.src) {
					return nil, p.errorf("unterminated string literal")
				}
				if p.src[p.pos] == '"' {
					p.pos++
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				seq = append(seq, elem{kind: eChar, ranges: []span{{r, r}}})
			}
			if len(seq) == start { // "": nothing to match
				last = -1
				p.space(nested)
				continue
			}
		case c == '[':
			e, err := p.class()
			if err != nil {
				return nil, err
			}
			seq = append(seq, e)
		case c == '.':
			p.pos++
			seq = append(seq, elem{kind: eChar, neg: true}) // outside no range: any code point
		case c == '(':
			p.pos++
			p.space(true)
			alts, err := p.alternates(true)
			if err != nil {
				return nil, err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.errorf("a closing ) is wanted")
			}
			p.pos++
			r, err := p.newRule(alts)
			if err != nil {
				return nil, err
			}
			seq = append(seq, elem{kind: eRule, rule: r})
		case isNameByte(c):
			at := p.pos
			name := p.name()
			if rest := p.src[p.pos:]; strings.HasPrefix(strings.TrimLeft(rest, " \t"), "::=") {
				p.pos = at // the next rule's name: this sequence ended at a newline we did not see
				return seq, p.errorf("rule %q begins where a sequence continues (a missing newline?)", name)
			}
			r, err := p.ruleIndex(name)
			if err != nil {
				return nil, err
			}
			if _, ok := p.used[name]; !ok {
				p.used[name] = at
			}
			seq = append(seq, elem{kind: eRule, rule: r})
		case c == '*' || c == '+' || c == '?' || c == '{':
			if last < 0 {
				return nil, p.errorf("%q repeats nothing", c)
			}
			min, max, err := p.repetition()
			if err != nil {
				return nil, err
			}
			item := slices.Clone(seq[last:])
			seq = seq[:last]
			rep, err := p.repeat(item, min, max)
			if err != nil {
				return nil, err
			}
			seq = append(seq, rep...)
			last = -1 // a repetition of a repetition is refused, as llama.cpp does
			p.space(nested)
			continue
		default:
			return seq, nil
		}
		last = start
		p.space(nested)
	}
	return seq, nil
}

// repetition reads *, +, ? or {m}, {m,}, {m,n}, {,n}: max -1 unbounded.
func (p *parser) repetition() (min, max int, err error) {
	c := p.src[p.pos]
	p.pos++
	switch c {
	case '*':
		return 0, -1, nil
	case '+':
		return 1, -1, nil
	case '?':
		return 0, 1, nil
	}
	num := func() (int, bool, error) {
		p.space(false)
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if start == p.pos {
			return 0, false, nil
		}
		n, err := strconv.Atoi(p.src[start:p.pos])
		if err != nil || n > maxRepeat {
			return 0, false, p.errorf("repetition bound %s: at most %d", p.src[start:p.pos], maxRepeat)
		}
		p.space(false)
		return n, true, nil
	}
	lo, okLo, err := num()
	if err != nil {
		return 0, 0, err
	}
	switch {
	case p.pos < len(p.src) && p.src[p.pos] == '}':
		if !okLo {
			return 0, 0, p.errorf("{} wants a count")
		}
		p.pos++
		return lo, lo, nil
	case p.pos < len(p.src) && p.src[p.pos] == ',':
		p.pos++
		hi, okHi, err := num()
		if err != nil {
			return 0, 0, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != '}' {
			return 0, 0, p.errorf("a closing } is wanted")
		}
		p.pos++
		if !okHi {
			return lo, -1, nil
		}
		if hi < lo {
			return 0, 0, p.errorf("repetition {%d,%d}: the most is below the least", lo, hi)
		}
		return lo, hi, nil
	}
	return 0, 0, p.errorf("a repetition {m}, {m,}, {m,n} or {,n} is wanted")
}

// repeat is item min to max times (max -1: unbounded), through new rules
// as llama.cpp rewrites them: x* is r ::= x r | ε, x{0,n} nested optionals.
func (p *parser) repeat(item []elem, min, max int) ([]elem, error) {
	var out []elem
	for range min {
		out = append(out, item...)
	}
	if max < 0 {
		i, err := p.newRule(nil)
		if err != nil {
			return nil, err
		}
		p.alts[i] = [][]elem{append(slices.Clone(item), elem{kind: eRule, rule: i}), {}}
		return append(out, elem{kind: eRule, rule: i}), nil
	}
	// (x (x (x)?)?)? for the max-min optional copies, innermost first.
	var tail []elem
	for range max - min {
		seq := append(slices.Clone(item), tail...)
		i, err := p.newRule([][]elem{seq, {}})
		if err != nil {
			return nil, err
		}
		tail = []elem{{kind: eRule, rule: i}}
	}
	return append(out, tail...), nil
}

// class reads [...]: ranges of code points, ^ for their complement.
func (p *parser) class() (elem, error) {
	p.pos++ // [
	e := elem{kind: eChar}
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		e.neg = true
		p.pos++
	}
	for {
		if p.pos >= len(p.src) {
			return e, p.errorf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return e, nil
		}
		lo, err := p.char()
		if err != nil {
			return e, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return e, err
			}
			if hi < lo {
				return e, p.errorf("character range %q-%q is backwards", lo, hi)
			}
		}
		e.ranges = append(e.ranges, span{lo, hi})
	}
}

// char reads one code point of a literal or a class, escapes included.
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.errorf("invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, p.errorf("an escape is cut short")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	hex := func(n int) (rune, error) {
		if p.pos+n > len(p.src) {
			return 0, p.errorf("\\%c wants %d hex digits", c, n)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, p.errorf("\\%c%s is not a code point", c, p.src[p.pos:p.pos+n])
		}
		p.pos += n
		return rune(v), nil
	}
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	case '\\', '"', '[', ']', '-', '^', '/', '.', '(', ')', '|', '*', '+', '?', '{', '}':
		return rune(c), nil
	}
	return 0, p.errorf("unknown escape \\%c", c)
}

// checkLeftRecursion refuses a rule that can reach itself before matching
// a code point (the recognizer would expand it forever).
func (g *Grammar) checkLeftRecursion() error {
	nullable := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for r, starts := range g.rules {
			if nullable[r] {
				continue
			}
			for _, s := range starts {
				if g.nullableFrom(int(s), nullable) {
					nullable[r], changed = true, true
					break
				}
			}
		}
	}
	// state: 0 unseen, 1 on the path, 2 done.
	state := make([]uint8, len(g.rules))
	var visit func(r int) error
	visit = func(r int) error {
		switch state[r] {
		case 1:
			return fmt.Errorf("grammar: rule %q is left-recursive (it can reach itself before matching a character)", g.ruleName(r))
		case 2:
			return nil
		}
		state[r] = 1
		for _, s := range g.rules[r] {
			for i := int(s); g.elems[i].kind == eRule; i++ {
				if err := visit(g.elems[i].rule); err != nil {
					return err
				}
				if !nullable[g.elems[i].rule] {
					break
				}
			}
		}
		state[r] = 2
		return nil
	}
	for r := range g.rules {
		if err := visit(r); err != nil {
			return err
		}
	}
	return nil
}

func (g *Grammar) nullableFrom(i int, nullable []bool) bool {
	for ; ; i++ {
		switch e := g.elems[i]; e.kind {
		case eEnd:
			return true
		case eChar:
			return false
		case eRule:
			if !nullable[e.rule] {
				return false
			}
		}
	}
}

// ruleName is a rule's name, or the named rule it was made inside of.
func (g *Grammar) ruleName(r int) string {
	if n := g.names[r]; !strings.HasPrefix(n, "#") {
		return n
	}
	return "(a group or repetition)"
}
