package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// piece is llama.cpp's token_to_piece without lstrip: the bytes token id
// stands for. Control and unknown tokens give their text only when special.
func (t *Tokenizer) piece(id int32, special bool) []byte {
	a := t.attrs[id]
	if !special && a&(attrUnknown|attrControl) != 0 {
		return nil
	}
	text := t.pieces[id]
	switch {
	case a&(attrUnknown|attrControl|attrUserDefined) != 0:
		return []byte(text)
	case a&attrNormal != 0:
		if t.kind == SPM {
			return []byte(strings.ReplaceAll(text, spaceMark, " "))
		}
		return byteLevelPiece(text)
	case a&attrByte != 0:
		return []byte{hexByte(text)}
	}
	return nil // unused and undefined tokens print nothing
}

// hexByte reads the XX of a "<0xXX>" byte token as strtol(text[3:5], 16)
// would: it stops at the first non-hex digit.
func hexByte(text string) byte {
	var v byte
	if len(text) < 5 {
		return 0
	}
	for _, c := range []byte(text[3:5]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return v
		}
		v = v<<4 | d
	}
	return v
}

// byteLevelPiece is llama.cpp's llama_decode_text: each character of a
// byte-level token maps back to its byte; a character outside the alphabet
// is written as "[UNK_BYTE_0x…" followed by the token text and "]".
func byteLevelPiece(text string) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		r, size := decodeRune(text[i:])
		i += size
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
			continue
		}
		out = append(out, "[UNK_BYTE_0x"...)
		for _, c := range appendRune(nil, r) {
			out = fmt.Appendf(out, "%02x", c)
		}
		out = append(out, text...)
		out = append(out, ']')
	}
	return out
}

// Piece returns the bytes token id stands for, as llama_token_to_piece with
// lstrip 0: control and unknown tokens give their text only when special.
// The bytes may be part of a UTF-8 character.
func (t *Tokenizer) Piece(id int32, special bool) (string, error) {
	if id < 0 || int(id) >= len(t.pieces) {
		return "", fmt.Errorf("tokenizer: token id %d out of range [0, %d)", id, len(t.pieces))
	}
	if !special && t.attrs[id]&(attrUnknown|attrControl) != 0 {
		return "", nil
	}
	return t.decoded[id], nil
}

// Decode returns the exact bytes ids stand for: the concatenation of their
// pieces (control tokens included when special), without llama.cpp's
// clean-up of spaces. For SPM vocabularies that add a space prefix, the
// space Encode put before the text is dropped again — the leading space of
// the first piece after any leading control tokens (BOS) — so
// Decode(Encode(x, AddSpecial)) == x for valid UTF-8 x. (llama_detokenize
// keeps that space when BOS is present; Detokenize matches it exactly.)
func (t *Tokenizer) Decode(ids []int32, special bool) ([]byte, error) {
	var out []byte
	strip := t.addSpacePrefix
	for _, id := range ids {
		p, err := t.Piece(id, special)
		if err != nil {
			return out, err
		}
		if strip && t.attrs[id]&attrControl == 0 {
			if len(p) > 0 && p[0] == ' ' {
				p = p[1:]
			}
			strip = false
		}
		out = append(out, p...)
	}
	return out, nil
}

// Detokenize is llama_detokenize: with removeSpecial a leading BOS and a
// trailing EOS the vocabulary adds are dropped; unparseSpecial prints
// control tokens; and vocabularies that ask for it (byte-level BPE) get
// llama.cpp's clean-up of spaces before punctuation and contractions.
func (t *Tokenizer) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) ([]byte, error) {
	removeSpace := t.addSpacePrefix
	if removeSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if removeSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var text []byte
	for _, id := range ids {
		p, err := t.Piece(id, unparseSpecial)
		if err != nil {
			return text, err
		}
		if removeSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		removeSpace = false
		text = append(text, p...)
	}
	if t.cleanSpaces {
		text = cleanSpaces(text)
	}
	return text, nil
}

// cleanSpaces repeats llama_detokenize's three clean-up passes, in place
// as llama.cpp runs them (each pass reads the bytes the previous one left).
func cleanSpaces(text []byte) []byte {
	// " ?", " !", " .", " ," lose the space.
	out := text[:min(len(text), 1)]
	for i := 1; i < len(text); i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			out = out[:len(out)-1]
		}
		out = append(out, x)
	}
	// " ' " becomes "'".
	text = out
	out = text[:min(len(text), 1)]
	for i := 1; i < len(text); i++ {
		x := text[i]
		if x == '\'' && i+1 < len(text) && text[i-1] == ' ' && text[i+1] == ' ' {
			out = out[:len(out)-1] // the space before
			i++                    // and the one after, which llama.cpp
			text[i] = 0            // also zeroes (the next test reads it)
		}
		out = append(out, x)
	}
	// " 's", " 'm", " 're", " 've" lose the space.
	text = out
	out = text[:min(len(text), 1)]
	for i := 1; i < len(text); i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < len(text) {
			x1 := text[i+1]
			switch {
			case x1 == 's' || x1 == 'm':
				out = out[:len(out)-1]
			case x1 == 't' || x1 == 'd':
			case i+2 < len(text):
				x2 := text[i+2]
				if x1 == 'r' && x2 == 'e' || x1 == 'v' && x2 == 'e' {
					out = out[:len(out)-1]
				}
			}
		}
		out = append(out, x)
	}
	return out
}

// A StreamDecoder turns ids into text as they are generated, holding back
// the bytes of a UTF-8 character until it is complete, so no write ever
// ends inside a character.
type StreamDecoder struct {
	t       *Tokenizer
	special bool
	first   bool
	pending []byte
}

// NewStreamDecoder returns a decoder; special selects whether control
// tokens print their text.
func (t *Tokenizer) NewStreamDecoder(special bool) *StreamDecoder {
	return &StreamDecoder{t: t, special: special, first: true}
}

// Next adds one token and returns the text that is now complete.
func (d *StreamDecoder) Next(id int32) (string, error) {
	p, err := d.t.Piece(id, d.special)
	if err != nil {
		return "", err
	}
	if d.first && d.t.attrs[id]&attrControl == 0 {
		if d.t.addSpacePrefix && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		d.first = false
	}
	d.pending = append(d.pending, p...)
	n := completePrefix(d.pending)
	out := string(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out, nil
}

// Flush returns whatever is held back (an incomplete character at the end
// of the stream, as raw bytes).
func (d *StreamDecoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns the length of the longest prefix of b that does
// not end inside a UTF-8 character which later bytes could still complete.
// Bytes that can never start or continue a valid character are released.
func completePrefix(b []byte) int {
	// Only the last three bytes can be an incomplete character.
	for back := 1; back <= 3 && back <= len(b); back++ {
		i := len(b) - back
		c := b[i]
		if c < 0x80 {
			return len(b)
		}
		if c < 0xC0 {
			continue // a continuation byte: look further back for its lead
		}
		need := utf8Len(c)
		if c >= 0xF8 || need <= back {
			return len(b) // the lead's character is complete (or it is no lead)
		}
		if !utf8.FullRune(b[i:]) && validSoFar(b[i:]) {
			return i
		}
		return len(b)
	}
	return len(b)
}

// validSoFar reports whether b, a lead byte and continuation bytes, can
// still become a valid character.
func validSoFar(b []byte) bool {
	for _, c := range b[1:] {
		if c&0xC0 != 0x80 {
			return false
		}
	}
	// Let utf8 judge with padding: a prefix of a valid sequence decodes to
	// a rune once completed with the smallest continuation bytes.
	probe := append([]byte(nil), b...)
	for len(probe) < utf8Len(b[0]) {
		probe = append(probe, 0x80)
	}
	r, _ := utf8.DecodeRune(probe)
	if r != utf8.RuneError {
		return true
	}
	// Some prefixes need a higher continuation byte (E0 A0, F0 90).
	probe = append(probe[:len(b)], 0xBF, 0xBF, 0xBF)[:utf8Len(b[0])]
	r, _ = utf8.DecodeRune(probe)
	return r != utf8.RuneError
}
