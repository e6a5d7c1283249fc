package tokenizer

import (
	"sync"
	"unicode"
)

// This file holds llama.cpp's view of Unicode: its lenient UTF-8 decoder
// (unicode_cpt_from_utf8), the code point classes its pre-tokenizers test,
// and GPT-2's byte↔Unicode mapping.

// runeError stands for an invalid byte, as in llama.cpp (U+FFFD).
const runeError = 0xFFFD

// maxCodePoint bounds code points llama.cpp can encode back to UTF-8.
const maxCodePoint = 0x10FFFF

// utf8Len is llama.cpp's unicode_len_utf8: the sequence length announced by
// a lead byte, 1 for continuation and ASCII bytes.
func utf8Len(b byte) int {
	return int([16]uint8{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4])
}

// decodeRune decodes one code point from s as llama.cpp does: it checks
// only that continuation bytes are present and of the form 10xxxxxx, so it
// accepts overlong forms, surrogates and values above U+10FFFF. On invalid
// input it returns (runeError, 1).
func decodeRune(s string) (r rune, size int) {
	c := s[0]
	switch {
	case c < 0x80:
		return rune(c), 1
	case c&0x40 == 0:
		return runeError, 1
	case c&0x20 == 0:
		if len(s) < 2 || s[1]&0xC0 != 0x80 {
			return runeError, 1
		}
		return rune(c&0x1F)<<6 | rune(s[1]&0x3F), 2
	case c&0x10 == 0:
		if len(s) < 3 || s[1]&0xC0 != 0x80 || s[2]&0xC0 != 0x80 {
			return runeError, 1
		}
		return rune(c&0x0F)<<12 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
	case c&0x08 == 0:
		if len(s) < 4 || s[1]&0xC0 != 0x80 || s[2]&0xC0 != 0x80 || s[3]&0xC0 != 0x80 {
			return runeError, 1
		}
		return rune(c&0x07)<<18 | rune(s[1]&0x3F)<<12 | rune(s[2]&0x3F)<<6 | rune(s[3]&0x3F), 4
	}
	return runeError, 1
}

// appendRune is llama.cpp's unicode_cpt_to_utf8 (no surrogate check; values
// above U+10FFFF are the caller's to reject).
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(dst, 0xF0|byte(r>>18)&0x07, 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

// Code point classes, as the bits of a class byte. A position outside the
// text has class 0; every code point inside has at least classAny (llama.cpp
// gives every code point, even an unassigned one, a non-zero flag word).
const (
	classAny uint8 = 1 << iota
	classLetter
	classNumber
	classSpace
)

var (
	bmpClassesOnce sync.Once
	bmpClasses     *[0x10000]uint8
)

// classOf returns r's class byte: \p{L}, \p{N} and \s as llama.cpp's
// tables define them (\s is Unicode's White_Space property).
func classOf(r rune) uint8 {
	if r < 0x80 {
		return asciiClasses[r]
	}
	if r < 0x10000 {
		bmpClassesOnce.Do(buildBMPClasses)
		return bmpClasses[r]
	}
	return computeClass(r)
}

func computeClass(r rune) uint8 {
	c := classAny
	if r > maxCodePoint {
		return c
	}
	switch {
	case unicode.IsLetter(r):
		c |= classLetter
	case unicode.IsNumber(r):
		c |= classNumber
	}
	if unicode.Is(unicode.White_Space, r) {
		c |= classSpace
	}
	return c
}

func buildBMPClasses() {
	t := new([0x10000]uint8)
	for r := range t {
		t[r] = computeClass(rune(r))
	}
	bmpClasses = t
}

var asciiClasses = func() (t [128]uint8) {
	for r := range t {
		t[r] = computeClass(rune(r))
	}
	return t
}()

// byteToRune is GPT-2's byte→Unicode map: printable Latin-1 bytes stand for
// themselves, the other 68 are shifted to U+0100 and up in byte order.
var byteToRune, runeToByte = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := rune(0)
	for b := 0; b < 256; b++ {
		if b >= 0x21 && b <= 0x7E || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			b2r[b] = rune(b)
		} else {
			b2r[b] = 256 + n
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelDecode maps byte-level text back to raw bytes; ok is false when
// text holds a character outside the 256-character alphabet.
func byteLevelDecode(text string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		r, size := decodeRune(text[i:])
		i += size
		b, found := runeToByte[r]
		if !found || r == runeError && size == 1 {
			return nil, false
		}
		raw = append(raw, b)
	}
	return raw, true
}
