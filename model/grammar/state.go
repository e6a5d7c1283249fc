package grammar

import (
	"slices"
	"unicode/utf8"
)

// maxStacks bounds the stacks a State holds: an ambiguous grammar's
// alternatives multiply them. Past it the readings beyond the first
// maxStacks are dropped: the text still follows the grammar (by the
// readings kept), and generation never runs out of allowed tokens.
const maxStacks = 4096

// A State recognizes prefixes of the texts root derives: the stacks of
// positions still to match (each a prefix's reading; the top is a
// character element, or the stack is empty where the text may end), and
// the bytes of a code point not yet complete.
type State struct {
	g       *Grammar
	stacks  [][]int32
	pending []byte
	bad     bool
}

// Start is the state before the first byte.
func (g *Grammar) Start() *State {
	s := &State{g: g}
	for _, a := range g.rules[g.root] {
		s.stacks = g.expand(s.stacks, []int32{a})
	}
	s.stacks = dedup(s.stacks)
	return s
}

// expand appends to out the stacks stack leads to with a character
// element (or nothing) on top: ends of alternatives popped, rule
// references replaced by their alternatives over the continuation.
func (g *Grammar) expand(out [][]int32, stack []int32) [][]int32 {
	for {
		if len(stack) == 0 {
			return append(out, stack)
		}
		top := stack[len(stack)-1]
		switch e := g.elems[top]; e.kind {
		case eEnd:
			stack = stack[:len(stack)-1]
		case eChar:
			return append(out, stack)
		default: // eRule: the continuation below, an alternative above it
			cont := slices.Clone(stack)
			cont[len(cont)-1] = top + 1
			for _, a := range g.rules[e.rule] {
				out = g.expand(out, append(slices.Clone(cont), a))
			}
			return out
		}
	}
}

func dedup(stacks [][]int32) [][]int32 {
	if len(stacks) < 2 {
		return stacks
	}
	seen := make(map[string]bool, len(stacks))
	out := stacks[:0]
	for _, st := range stacks {
		k := string(int32Bytes(st))
		if !seen[k] {
			seen[k] = true
			out = append(out, st)
		}
	}
	return out
}

func int32Bytes(s []int32) []byte {
	b := make([]byte, 0, 4*len(s))
	for _, v := range s {
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return b
}

func (e *elem) matches(r rune) bool {
	in := false
	for _, sp := range e.ranges {
		if r >= sp.lo && r <= sp.hi {
			in = true
			break
		}
	}
	return in != e.neg
}

// overlaps reports whether some code point in [lo, hi] matches e.
func (e *elem) overlaps(lo, hi rune) bool {
	if !e.neg {
		for _, sp := range e.ranges {
			if sp.lo <= hi && lo <= sp.hi {
				return true
			}
		}
		return false
	}
	// Some point of [lo, hi] outside every range: walk the covered part.
	for c := lo; c <= hi; {
		next := c
		for _, sp := range e.ranges {
			if c >= sp.lo && c <= sp.hi {
				next = sp.hi + 1
			}
		}
		if next == c {
			return true
		}
		c = next
	}
	return false
}

// Done reports whether the text so far is one root derives.
func (s *State) Done() bool {
	if s.bad || len(s.pending) > 0 {
		return false
	}
	for _, st := range s.stacks {
		if len(st) == 0 {
			return true
		}
	}
	return false
}

// Failed reports whether no continuation can make the text one root derives.
func (s *State) Failed() bool { return s.bad }

// Clone is a copy of s that advances on its own.
func (s *State) Clone() *State {
	c := &State{g: s.g, stacks: s.stacks, pending: slices.Clone(s.pending), bad: s.bad}
	return c // stacks are never changed in place, only replaced
}

// WriteString advances s over p and reports whether the text is still a
// prefix of one root derives.
func (s *State) WriteString(p string) bool {
	for i := 0; i < len(p) && !s.bad; i++ {
		s.pending = append(s.pending, p[i])
		if !utf8.FullRune(s.pending) {
			if !s.partialOK() {
				s.bad = true
			}
			continue
		}
		r, n := utf8.DecodeRune(s.pending)
		if r == utf8.RuneError && n <= 1 || n != len(s.pending) {
			s.bad = true
			break
		}
		s.pending = s.pending[:0]
		s.advance(r)
	}
	return !s.bad
}

// advance moves every stack whose top matches r past it.
func (s *State) advance(r rune) {
	s.stacks = s.g.advance(s.stacks, func(_ int, e *elem) bool { return e.matches(r) })
	if len(s.stacks) == 0 {
		s.bad = true
	}
}

// advance is the stacks that the stacks whose top match takes (stack i,
// its top e) lead to, at most maxStacks of them (see maxStacks).
func (g *Grammar) advance(stacks [][]int32, match func(i int, e *elem) bool) [][]int32 {
	var next [][]int32
	for i, st := range stacks {
		if len(st) == 0 || !match(i, &g.elems[st[len(st)-1]]) {
			continue
		}
		moved := slices.Clone(st)
		moved[len(moved)-1]++
		next = g.expand(next, moved)
		if len(next) > maxStacks {
			next = dedup(next)
			if len(next) > maxStacks {
				next = next[:maxStacks]
				break
			}
		}
	}
	return dedup(next)
}

// partialOK reports whether the pending bytes (an incomplete code point)
// can still complete to one some stack's top matches.
func (s *State) partialOK() bool {
	b := s.pending
	var size int
	switch c := b[0]; {
	case c < 0x80:
		return false
	case c&0xE0 == 0xC0:
		size = 2
	case c&0xF0 == 0xE0:
		size = 3
	case c&0xF8 == 0xF0:
		size = 4
	default:
		return false
	}
	for _, c := range b[1:] {
		if c&0xC0 != 0x80 {
			return false
		}
	}
	lo, hi := slices.Clone(b), slices.Clone(b)
	for len(lo) < size {
		lo, hi = append(lo, 0x80), append(hi, 0xBF)
	}
	// The code points these bytes can still begin, less the overlong
	// encodings and those past U+10FFFF (which UTF-8 does not allow).
	rlo, rhi := max(decodeLoose(lo), []rune{0, 0, 0x80, 0x800, 0x10000}[size]), min(decodeLoose(hi), utf8.MaxRune)
	if rlo > rhi {
		return false
	}
	for _, st := range s.stacks {
		if len(st) > 0 && s.g.elems[st[len(st)-1]].overlaps(rlo, rhi) {
			return true
		}
	}
	return false
}

func decodeLoose(b []byte) rune {
	r := rune(b[0]) & (0x7F >> len(b))
	for _, c := range b[1:] {
		r = r<<6 | rune(c&0x3F)
	}
	return r
}
