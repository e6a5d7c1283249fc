package tokenizer

import (
	"fmt"
	"strings"
)

// spaceMark is SentencePiece's escaped space, U+2581 (▁).
const spaceMark = "\u2581"

type spmSymbol struct {
	start, n   int32 // bytes of the escaped text
	prev, next int32
}

type spmBigram struct {
	left, right int32
	score       float32
	size        int32
}

// before pops the highest score first, then the leftmost, like llama.cpp's
// llm_bigram_spm comparator.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || a.score == b.score && a.left < b.left
}

// spmFragment tokenizes one text fragment as llama.cpp's
// llm_tokenizer_spm_session: escape spaces, start from UTF-8 characters,
// merge the best-scoring pair that is a token until none is left, and spell
// leftovers as byte tokens.
//
// llama.cpp merges over the whole fragment at once. When no token has a ▁
// after another character (true of Llama 2's and stories260K's
// vocabularies), no merge can cross the start of a ▁ that follows another
// character, so merging each such segment alone takes the same decisions —
// in a small heap instead of one the size of the text. When no token holds
// a newline with other characters, segments are also cut around newlines.
func (t *Tokenizer) spmFragment(dst []int32, frag string, prevSpecial bool, s *scratch) ([]int32, error) {
	buf := s.spmText[:0]
	if t.addSpacePrefix && prevSpecial {
		buf = append(buf, spaceMark...)
	}
	for i := 0; i < len(frag); i++ {
		if frag[i] == ' ' {
			buf = append(buf, spaceMark...)
		} else {
			buf = append(buf, frag[i])
		}
	}
	s.spmText = buf
	text := string(buf)
	if !t.spmSplitAtSpace {
		return t.spmSegment(dst, text, s)
	}
	var err error
	seg, prevChar := 0, 0
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		cut := strings.HasPrefix(text[off:], spaceMark) && text[prevChar:off] != spaceMark ||
			t.spmSplitAtNewline && (text[off] == '\n' || text[prevChar] == '\n')
		if off > seg && cut {
			if dst, err = t.cachedSPMSegment(dst, text[seg:off], s); err != nil {
				return dst, err
			}
			seg = off
		}
		prevChar = off
		off += n
	}
	return t.cachedSPMSegment(dst, text[seg:], s)
}

// cachedSPMSegment is spmSegment behind the per-scratch word cache.
func (t *Tokenizer) cachedSPMSegment(dst []int32, seg string, s *scratch) ([]int32, error) {
	if ids, ok := s.cached(t, seg); ok {
		return append(dst, ids...), nil
	}
	n := len(dst)
	dst, err := t.spmSegment(dst, seg, s)
	if err == nil {
		s.remember(seg, dst[n:])
	}
	return dst, err
}

// spmSegment merges one escaped segment (non-empty).
func (t *Tokenizer) spmSegment(dst []int32, text string, s *scratch) ([]int32, error) {
	syms := s.spmSyms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(syms))
		syms = append(syms, spmSymbol{start: int32(off), n: int32(n), prev: i - 1, next: i + 1})
		off += n
	}
	syms[len(syms)-1].next = -1

	h := s.spmHeap[:0]
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a := syms[l].start
		piece := text[a : a+syms[l].n+syms[r].n]
		if id, ok := t.textToID[piece]; ok {
			h.push(spmBigram{left: l, right: r, score: t.scores[id], size: int32(len(piece))})
		}
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	s.spmSyms, s.spmHeap = syms, h

	for i := int32(0); i != -1; i = syms[i].next {
		sym := syms[i]
		piece := text[sym.start : sym.start+sym.n]
		if id, ok := t.textToID[piece]; ok {
			dst = append(dst, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			id, err := t.spmByteToken(piece[j])
			if err != nil {
				return dst, err
			}
			dst = append(dst, id)
		}
	}
	return dst, nil
}

// spmByteToken is llama.cpp's byte_to_token for SPM: the <0xXX> token, or
// else a token whose text is the byte itself.
func (t *Tokenizer) spmByteToken(b byte) (int32, error) {
	if id := t.byteTokens[b]; id != NoToken {
		return id, nil
	}
	return NoToken, fmt.Errorf("tokenizer: SPM vocabulary has no token for byte 0x%02X (neither <0x%02X> nor the byte itself)", b, b)
}

// spmSplittable reports whether no token has a ▁ after another character,
// which makes spmFragment's segmentation exact; and whether no token but
// "\n" itself holds a newline, which makes cutting around newlines exact too.
func (t *Tokenizer) spmSplittable() (atSpace, atNewline bool) {
	atSpace, atNewline = true, true
	for _, p := range t.pieces {
		if strings.Contains(strings.TrimLeft(p, spaceMark), spaceMark) {
			atSpace = false
		}
		if len(p) > 1 && strings.Contains(p, "\n") {
			atNewline = false
		}
	}
	return atSpace, atSpace && atNewline
}

func (t *Tokenizer) findByteTokens() {
	for b := range t.byteTokens {
		t.byteTokens[b] = NoToken
		if id, ok := t.textToID[fmt.Sprintf("<0x%02X>", b)]; ok {
			t.byteTokens[b] = id
		} else if id, ok := t.textToID[string([]byte{byte(b)})]; ok {
			t.byteTokens[b] = id
		}
	}
}
