package grammar

import (
	"unicode/utf8"

	"github.com/damascus-llm/damascus/model/sample"
)

// Vocab is what a Table reads of the tokenizer.
type Vocab = sample.Vocab

// A Table is a vocabulary read once for every Constraint over it.
type Table struct {
	pieces []string
	eog    []bool
}

// NewTable reads the tokens 0..n-1 of v (see sample.Pieces).
func NewTable(v Vocab, n int) *Table {
	t := &Table{}
	t.pieces, t.eog = sample.Pieces(v, n)
	return t
}

// A Constraint lets the sampler pick only tokens that keep the generated
// text a prefix of one the grammar derives, and a token that ends
// generation only where the text is complete (sample.Constraint). Tokens
// without text (control tokens) are refused.
type Constraint struct {
	t  *Table
	st *State
	// nodes are the stack sets met while checking tokens, each with the
	// sets its code points lead to by which of its stacks match them
	// (memoized: a vocabulary scan inside a string repeats one step);
	// base is the current state's.
	nodes map[string]*node
	base  *node
}

// A node is a set of stacks and, by the mask of those whose top matches a
// code point, the node the code point leads to.
type node struct {
	stacks [][]int32
	next   map[uint64]*node
}

// maxNodes bounds the memo; past it the memo starts again.
const maxNodes = 1 << 14

// New returns a constraint to the texts g derives, at the answer's start.
func (t *Table) New(g *Grammar) *Constraint {
	return &Constraint{t: t, st: g.Start(), nodes: map[string]*node{}}
}

func (c *Constraint) nodeOf(stacks [][]int32) *node {
	var k []byte
	for _, st := range stacks {
		k = append(k, int32Bytes(st)...)
		k = append(k, 0xff, 0xff, 0xff, 0xff) // no position is -1
	}
	if n, ok := c.nodes[string(k)]; ok {
		return n
	}
	if len(c.nodes) >= maxNodes {
		clear(c.nodes)
		c.base = nil
	}
	n := &node{stacks: stacks, next: map[uint64]*node{}}
	c.nodes[string(k)] = n
	return n
}

// step is the node code point r leads n to (no stacks: r is refused), or
// nil where n has more stacks than a mask holds.
func (c *Constraint) step(n *node, r rune) *node {
	if len(n.stacks) > 64 {
		return nil
	}
	g := c.st.g
	var mask uint64
	for i, st := range n.stacks {
		if len(st) > 0 && g.elems[st[len(st)-1]].matches(r) {
			mask |= 1 << i
		}
	}
	if nx, ok := n.next[mask]; ok {
		return nx
	}
	nx := c.nodeOf(g.advance(n.stacks, func(i int, _ *elem) bool { return mask&(1<<i) != 0 }))
	n.next[mask] = nx
	return nx
}

// Allows reports whether token id may come next.
func (c *Constraint) Allows(id int) bool {
	t := c.t
	if id < 0 || id >= len(t.pieces) {
		return false
	}
	if t.eog[id] {
		return c.st.Done()
	}
	p := t.pieces[id]
	if p == "" || c.st.bad {
		return false
	}
	if len(c.st.pending) > 0 {
		return c.st.Clone().WriteString(p)
	}
	if c.base == nil {
		c.base = c.nodeOf(c.st.stacks)
	}
	n := c.base
	for i := 0; i < len(p); {
		if !utf8.FullRuneInString(p[i:]) { // a code point the next token completes
			s := &State{g: c.st.g, stacks: n.stacks}
			return s.WriteString(p[i:])
		}
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		nx := c.step(n, r)
		if nx == nil { // too many stacks for a mask: the plain walk
			s := &State{g: c.st.g, stacks: n.stacks}
			return s.WriteString(p[i:])
		}
		if len(nx.stacks) == 0 {
			return false
		}
		n, i = nx, i+size
	}
	return true
}

// Accept advances the constraint over the token picked.
func (c *Constraint) Accept(id int) {
	if id < 0 || id >= len(c.t.pieces) || c.t.eog[id] {
		return
	}
	c.st.WriteString(c.t.pieces[id])
	c.base = nil
}

// Done reports whether the text so far is complete under the grammar.
func (c *Constraint) Done() bool { return c.st.Done() }
