package tokenizer

import (
	"fmt"
	"strings"
	"sync"
)

// EncodeFlags are Encode's switches, as llama_tokenize's add_special and
// parse_special.
type EncodeFlags uint8

const (
	// AddSpecial adds BOS and/or EOS as the vocabulary asks
	// (tokenizer.ggml.add_bos_token / add_eos_token).
	AddSpecial EncodeFlags = 1 << iota
	// ParseSpecial recognises the text of control tokens
	// (<|eot_id|>, <s>, …) in the input. User-defined tokens are always
	// recognised.
	ParseSpecial
)

// Encode returns the token ids of text. Text may hold any bytes; invalid
// UTF-8 is handled as llama.cpp handles it. The only error is input llama.cpp
// itself cannot handle (a byte-level BPE word holding a 4-byte sequence
// above U+10FFFF, or an SPM vocabulary without a byte token it needs).
func (t *Tokenizer) Encode(text string, flags EncodeFlags) ([]int32, error) {
	return t.AppendEncode(make([]int32, 0, len(text)/3+2), text, flags)
}

// AppendEncode is Encode appending to dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string, flags EncodeFlags) ([]int32, error) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)

	addSpecial := flags&AddSpecial != 0
	if addSpecial && t.addBOS {
		dst = append(dst, t.bos)
	}
	frags := s.frags[:0]
	if text != "" {
		frags = append(frags, fragment{text: text, id: NoToken})
		frags = t.partition(frags, flags&ParseSpecial != 0, &s.frags2)
	}
	s.frags = frags

	prevSpecial := true // SPM prefixes a space to the first text and to text after a special token
	var err error
	for _, f := range frags {
		if f.id != NoToken {
			dst = append(dst, f.id)
			prevSpecial = true
			continue
		}
		switch t.kind {
		case SPM:
			dst, err = t.spmFragment(dst, f.text, prevSpecial, s)
		case BPE:
			dst, err = t.bpeFragment(dst, f.text, s)
		}
		if err != nil {
			return dst, err
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS {
		dst = append(dst, t.eos)
	}
	return dst, nil
}

// A fragment is raw text (id == NoToken) or a special token found in it.
type fragment struct {
	text string
	id   int32
}

// partition splits text fragments at special tokens, longest token first,
// as llama.cpp's tokenizer_st_partition. Without parseSpecial only
// user-defined tokens are split out.
func (t *Tokenizer) partition(frags []fragment, parseSpecial bool, spare *[]fragment) []fragment {
	for _, id := range t.specials {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		tok := t.pieces[id]
		found := false
		for _, f := range frags {
			if f.id == NoToken && strings.Contains(f.text, tok) {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		out := (*spare)[:0]
		for _, f := range frags {
			if f.id != NoToken {
				out = append(out, f)
				continue
			}
			rest := f.text
			for {
				i := strings.Index(rest, tok)
				if i < 0 {
					break
				}
				if i > 0 {
					out = append(out, fragment{text: rest[:i], id: NoToken})
				}
				out = append(out, fragment{id: id})
				rest = rest[i+len(tok):]
			}
			if rest != "" {
				out = append(out, fragment{text: rest, id: NoToken})
			}
		}
		*spare = frags
		frags = out
	}
	return frags
}

// scratch is per-call working memory, pooled.
type scratch struct {
	frags, frags2 []fragment
	cpts          []rune
	offs          []int
	ends          []int
	canon         []byte
	bpe           bpeScratch
	spmSyms       []spmSymbol
	spmHeap       queue[spmBigram]
	spmText       []byte

	// Words already merged, for the tokenizer cacheOwner.
	cacheOwner *Tokenizer
	cache      map[string]span
	cacheIDs   []int32
}

type span struct{ start, end int32 }

// maxCachedWords bounds the per-scratch word cache.
const maxCachedWords = 1 << 15

// cached returns the ids of a word t encoded before with this scratch.
func (s *scratch) cached(t *Tokenizer, word string) ([]int32, bool) {
	if s.cacheOwner != t || len(s.cache) >= maxCachedWords {
		s.cacheOwner = t
		s.cache = make(map[string]span, 1024)
		s.cacheIDs = s.cacheIDs[:0]
	}
	sp, ok := s.cache[word]
	if !ok {
		return nil, false
	}
	return s.cacheIDs[sp.start:sp.end], true
}

// remember caches the ids of a short word.
func (s *scratch) remember(word string, ids []int32) {
	if len(word) > 64 {
		return
	}
	start := int32(len(s.cacheIDs))
	s.cacheIDs = append(s.cacheIDs, ids...)
	s.cache[strings.Clone(word)] = span{start, int32(len(s.cacheIDs))} // not a view into the caller's text
}

// cachedBPEWord is bpeWord behind the per-scratch word cache: natural text
// repeats its words.
func (t *Tokenizer) cachedBPEWord(dst []int32, word string, s *scratch) []int32 {
	if ids, ok := s.cached(t, word); ok {
		return append(dst, ids...)
	}
	n := len(dst)
	dst = t.bpeWord(dst, word, &s.bpe)
	s.remember(word, dst[n:])
	return dst
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// chunkSize is the length above which a fragment is pre-tokenized in
// pieces, when the pre-tokenizer allows it, to bound working memory.
const chunkSize = 32 << 10

// bpeFragment pre-tokenizes one text fragment and merges each word, in
// pieces cut at newlines when the pre-tokenizer says words end there.
func (t *Tokenizer) bpeFragment(dst []int32, text string, s *scratch) ([]int32, error) {
	if !t.pre.Options().NewlineEndsWord {
		return t.bpeChunk(dst, text, s)
	}
	for len(text) > chunkSize {
		cut := newlineCut(text, chunkSize)
		if cut < 0 {
			break
		}
		var err error
		if dst, err = t.bpeChunk(dst, text[:cut], s); err != nil {
			return dst, err
		}
		text = text[cut:]
	}
	return t.bpeChunk(dst, text, s)
}

// newlineCut returns the first i ≥ from with text[i-1] a newline and
// text[i] printable ASCII, or -1.
func newlineCut(text string, from int) int {
	for i := from; i < len(text); i++ {
		if c := text[i]; c > ' ' && c < 0x7F && (text[i-1] == '\n' || text[i-1] == '\r') {
			return i
		}
	}
	return -1
}

// bpeChunk pre-tokenizes text and merges each word.
func (t *Tokenizer) bpeChunk(dst []int32, text string, s *scratch) ([]int32, error) {
	cpts, offs := s.cpts[:0], s.offs[:0]
	canonical := true
	for i := 0; i < len(text); {
		r, size := decodeRune(text[i:])
		if r > maxCodePoint {
			return dst, fmt.Errorf("tokenizer: input holds a UTF-8 sequence for U+%X, above U+10FFFF, at byte %d (llama.cpp cannot tokenize it either)", r, i)
		}
		if size != runeLen(r) { // an invalid byte (U+FFFD from one byte) or an overlong form
			canonical = false
		}
		cpts = append(cpts, r)
		offs = append(offs, i)
		i += size
	}
	// llama.cpp re-encodes the decoded code points, so an invalid byte
	// becomes U+FFFD and an overlong form its shortest encoding.
	if !canonical {
		canon := s.canon[:0]
		offs = offs[:0]
		for _, r := range cpts {
			offs = append(offs, len(canon))
			canon = appendRune(canon, r)
		}
		s.canon = canon
		text = string(canon)
	}
	offs = append(offs, len(text))
	ends := t.pre.Split(s.ends[:0], cpts)
	start := 0
	for _, end := range ends {
		dst = t.cachedBPEWord(dst, text[offs[start]:offs[end]], s)
		start = end
	}
	s.cpts, s.offs, s.ends = cpts, offs, ends
	return dst, nil
}

func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}
