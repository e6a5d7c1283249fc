package sample

// Vocab is what a Constraint over token texts (JSON mode's, a grammar's)
// reads of the tokenizer.
type Vocab interface {
	// Piece is a token's bytes (empty for control tokens without special).
	Piece(id int32, special bool) (string, error)
	// IsEOG reports whether a token ends generation.
	IsEOG(id int32) bool
}

// Pieces reads the tokens 0..n-1 of v (n the model's logits, which may
// exceed the tokenizer's tokens: those have no text): each one's text,
// empty where it has none, and whether it ends generation.
func Pieces(v Vocab, n int) (pieces []string, eog []bool) {
	pieces, eog = make([]string, n), make([]bool, n)
	for id := range n {
		if p, err := v.Piece(int32(id), false); err == nil {
			pieces[id], eog[id] = p, v.IsEOG(int32(id))
		}
	}
	return pieces, eog
}
