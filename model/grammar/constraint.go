package grammar

import "unicode/utf8"

// Vocab is what a Table reads of the tokenizer.
type Vocab interface {
	// Piece is a token's bytes (empty for control tokens without special).
	Piece(id int32, special bool) (string, error)
	// IsEOG reports whether a token ends generation.
	IsEOG(id int32) bool
}

// A Table is a vocabulary read once for every Constraint over it.
type Table struct {
	pieces []string
	eog    []bool
}

// NewTable reads the tokens 0..n-1 of v (n the model's logits, which may
// exceed the tokenizer's tokens: those have no text and are refused).
func NewTable(v Vocab, n int) *Table {
	t := &Table{pieces: make([]string, n), eog: make([]bool, n)}
	for id := range n {
		if p, err := v.Piece(int32(id), false); err == nil {
			t.pieces[id], t.eog[id] = p, v.IsEOG(int32(id))
		}
	}
	return t
}

// A Constraint lets the sampler pick only tokens that keep the generated
// text a prefix of one the grammar derives, and a token that ends
// generation only where the text is complete (sample.Constraint). Tokens
// without text (control tokens) are refused.
type Constraint struct {
	t  *Table
	st *State
}

// New returns a constraint to the texts g derives, at the answer's start.
func (t *Table) New(g *Grammar) *Constraint { return &Constraint{t: t, st: g.Start()} }

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
	// Most tokens fail on their first code point: check it on the stacks'
	// tops before copying the state.
	if len(c.st.pending) == 0 {
		if r, n := utf8.DecodeRuneInString(p); !(r == utf8.RuneError && n <= 1) {
			ok := false
			for _, st := range c.st.stacks {
				if len(st) > 0 && c.st.g.elems[st[len(st)-1]].matches(r) {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
		}
	}
	return c.st.Clone().WriteString(p)
}

// Accept advances the constraint over the token picked.
func (c *Constraint) Accept(id int) {
	if id < 0 || id >= len(c.t.pieces) || c.t.eog[id] {
		return
	}
	c.st.WriteString(c.t.pieces[id])
}

// Done reports whether the text so far is complete under the grammar.
func (c *Constraint) Done() bool { return c.st.Done() }
