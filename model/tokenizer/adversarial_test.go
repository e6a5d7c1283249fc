package tokenizer

import (
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// adversarial returns n deterministic strings built to break tokenizers:
// random code points of every plane (unassigned ones included), combining
// marks, emoji ZWJ sequences, CJK, Khmer, right-to-left scripts, control
// characters, long runs of spaces, tabs and newlines, digit runs of every
// length in several scripts, contractions in every letter case, special
// token texts, and invalid UTF-8 (stray and truncated bytes, overlong forms,
// surrogates). It never produces a 4-byte sequence above U+10FFFF, which
// llama.cpp's byte-level BPE cannot handle (it throws).
func adversarial(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for parts := 1 + rng.IntN(6); parts > 0; parts-- {
			advPart(rng, &b)
		}
		out = append(out, b.String())
	}
	return out
}

var (
	advWords       = []string{"the", "The", "THE", "llama", "don", "I", "we", "you", "it", "Hello", "world", "naïve", "café", "Ελλάδα", "Москва", "שלום", "مرحبا", "हिन्दी", "ភាសាខ្មែរ", "日本語", "中文", "한국어", "ไทย"}
	advContraction = []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"}
	advSpecials    = []string{"<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|python_tag|>", "<|reserved_special_token_7|>", "<|eot_id", "<|", "|>", "<s>", "</s>", "<unk>", "<0x41>", "▁", "Ġ", "Ċ"}
	advSpaces      = []rune{' ', '\t', '\n', '\r', '\v', '\f', 0x85, 0xA0, 0x1680, 0x2000, 0x2003, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0x200B, 0xFEFF}
	advDigits      = []rune{'0', '٠', '۵', '०', '๓', '０', '²', '½', 'Ⅻ', '①', '𝟘', '𑁦'}
	advEmoji       = []rune{0x1F600, 0x1F469, 0x1F468, 0x1F467, 0x1F999, 0x2764, 0x1F3F3, 0x1F308, 0x1F1FA, 0x1F1F8}
	advRanges      = [][2]rune{
		{0x20, 0x7E}, {0xA0, 0x24F}, {0x300, 0x36F}, {0x370, 0x3FF}, {0x400, 0x4FF}, {0x590, 0x5FF},
		{0x600, 0x6FF}, {0x900, 0x97F}, {0xE00, 0xE7F}, {0x1780, 0x17FF}, {0x1AB0, 0x1AFF}, {0x2000, 0x206F},
		{0x20D0, 0x20FF}, {0x2100, 0x218F}, {0x3040, 0x30FF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3},
		{0xFE00, 0xFE0F}, {0xFF00, 0xFFEF}, {0x10000, 0x1FFFF}, {0x1F300, 0x1FAFF}, {0x20000, 0x2FFFF},
		{0xE0000, 0xE007F}, {0xF0000, 0x10FFFF},
	}
)

func advPart(rng *rand.Rand, b *strings.Builder) {
	switch rng.IntN(16) {
	case 0: // any code point at all
		for k := 1 + rng.IntN(8); k > 0; k-- {
			r := rune(rng.IntN(0x110000))
			if r >= 0xD800 && r <= 0xDFFF {
				r = 0xFFFD
			}
			b.WriteRune(r)
		}
	case 1, 2: // code points from interesting blocks
		rg := advRanges[rng.IntN(len(advRanges))]
		for k := 1 + rng.IntN(12); k > 0; k-- {
			b.WriteRune(rg[0] + rune(rng.IntN(int(rg[1]-rg[0]+1))))
		}
	case 3: // words in many scripts, with combining marks
		w := advWords[rng.IntN(len(advWords))]
		if rng.IntN(3) == 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		for k := rng.IntN(3); k > 0; k-- {
			b.WriteRune(0x300 + rune(rng.IntN(0x70)))
		}
	case 4: // contractions in every case
		c := []byte(advContraction[rng.IntN(len(advContraction))])
		for i := 1; i < len(c); i++ {
			if rng.IntN(2) == 0 {
				c[i] -= 'a' - 'A'
			}
		}
		if rng.IntN(2) == 0 {
			b.WriteString(advWords[rng.IntN(len(advWords))])
		}
		if rng.IntN(4) == 0 {
			b.WriteRune('’')
			b.Write(c[1:])
		} else {
			b.Write(c)
		}
	case 5: // runs of white space
		n := 1 + rng.IntN(8)
		if rng.IntN(4) == 0 {
			n = 1 + rng.IntN(300)
		}
		mixed := rng.IntN(2) == 0
		r := advSpaces[rng.IntN(len(advSpaces))]
		for ; n > 0; n-- {
			if mixed {
				r = advSpaces[rng.IntN(len(advSpaces))]
			}
			b.WriteRune(r)
		}
	case 6: // digit runs of every length
		n := 1 + rng.IntN(40)
		d := advDigits[rng.IntN(len(advDigits))]
		for ; n > 0; n-- {
			if d == '0' {
				b.WriteByte(byte('0' + rng.IntN(10)))
			} else {
				b.WriteRune(d + rune(rng.IntN(2)))
			}
		}
	case 7: // emoji with ZWJ, skin tones and variation selectors
		for k := 1 + rng.IntN(4); k > 0; k-- {
			b.WriteRune(advEmoji[rng.IntN(len(advEmoji))])
			switch rng.IntN(4) {
			case 0:
				b.WriteRune(0x1F3FB + rune(rng.IntN(5)))
			case 1:
				b.WriteRune(0xFE0F)
			}
			if k > 1 {
				b.WriteRune(0x200D)
			}
		}
	case 8: // control characters
		for k := 1 + rng.IntN(6); k > 0; k-- {
			if rng.IntN(2) == 0 {
				b.WriteByte(byte(rng.IntN(0x20)))
			} else {
				b.WriteRune(0x7F + rune(rng.IntN(0x21)))
			}
		}
	case 9: // invalid UTF-8
		switch rng.IntN(6) {
		case 0:
			b.WriteByte(byte(0x80 + rng.IntN(0x80)))
		case 1: // truncated sequence
			var buf [4]byte
			n := utf8.EncodeRune(buf[:], 0x80+rune(rng.IntN(0x10000)))
			b.Write(buf[:1+rng.IntN(n)])
		case 2: // overlong forms
			b.WriteString([]string{"\xC0\x80", "\xC1\xBF", "\xE0\x80\xAF", "\xF0\x80\x80\xAF", "\xC0\xAF"}[rng.IntN(5)])
		case 3: // surrogates
			b.WriteString([]string{"\xED\xA0\x80", "\xED\xBF\xBF", "\xED\xA0\xBD\xED\xB8\x80"}[rng.IntN(3)])
		case 4:
			b.WriteString([]string{"\xF8\x88\x80\x80\x80", "\xFE", "\xFF", "\xFC"}[rng.IntN(4)])
		case 5: // a lead byte before a valid character
			b.WriteByte(byte(0xC2 + rng.IntN(0x30)))
			b.WriteString("a")
		}
	case 10: // punctuation and symbols next to letters and spaces
		p := []string{".", ",", "!", "?", "...", "--", "«", "»", "“", "”", "'", "\"", "(", ")", "[", "]", "{", "}", "#", "$", "%", "&", "*", "+", "=", "@", "^", "_", "`", "|", "~", "\\", "/", ":", ";", "<", ">", "€", "©", "°", "±", "→", "∑"}
		for k := 1 + rng.IntN(5); k > 0; k-- {
			if rng.IntN(3) == 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p[rng.IntN(len(p))])
		}
		if rng.IntN(2) == 0 {
			b.WriteString("\r\n")
		}
	case 11: // special-token texts
		b.WriteString(advSpecials[rng.IntN(len(advSpecials))])
	case 12: // right-to-left text with marks
		b.WriteRune(0x202B)
		b.WriteString(advWords[13+rng.IntN(2)])
		b.WriteRune(0x200F)
		b.WriteRune(0x64B + rune(rng.IntN(8)))
		b.WriteRune(0x202C)
	case 13: // CJK and Khmer runs
		base := []rune{0x4E00, 0x1780, 0x3040, 0xAC00}[rng.IntN(4)]
		for k := 1 + rng.IntN(10); k > 0; k-- {
			b.WriteRune(base + rune(rng.IntN(0x60)))
		}
	case 14: // long letter runs
		n := 1 + rng.IntN(200)
		for ; n > 0; n-- {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
	case 15: // ASCII prose
		for k := 1 + rng.IntN(6); k > 0; k-- {
			b.WriteString(advWords[rng.IntN(11)])
			b.WriteByte(" \n\t"[rng.IntN(3)])
		}
	}
}
