package tokenizer

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// A Pretokenizer splits text into the words that byte-level BPE merges
// within. It sees the text as code points (decoded the lenient llama.cpp
// way) and reports each word's end.
type Pretokenizer interface {
	// Name identifies the implementation ("llama3/scanner", …).
	Name() string
	// Split appends to ends the exclusive end index, in code points, of
	// each consecutive word of cpts and returns the extended slice. The
	// words cover cpts exactly.
	Split(ends []int, cpts []rune) []int
	// Options returns the vocabulary flags llama.cpp ties to this
	// pre-tokenizer type.
	Options() PretokenizerOptions
}

// PretokenizerOptions are llama.cpp's per-pre-tokenizer vocabulary flags.
type PretokenizerOptions struct {
	IgnoreMerges bool // a word that is itself a token is emitted whole
	AddBOS       bool // default for tokenizer.ggml.add_bos_token
	CleanSpaces  bool // detokenize cleans " ." and similar

	// NewlineEndsWord promises that a word always ends between a \r or \n
	// and a following printable ASCII character, so long text may be
	// pre-tokenized in pieces cut there.
	NewlineEndsWord bool
}

var (
	pretokMu   sync.RWMutex
	pretoks    = map[string]Pretokenizer{}            // tokenizer.ggml.pre → default implementation
	pretokAlts = map[string]map[string]Pretokenizer{} // tokenizer.ggml.pre → every implementation by name
)

// RegisterPretokenizer makes p an implementation of the pre-tokenizer that
// GGUF files name pre (tokenizer.ggml.pre). The first registered for a name
// is the default; others stay available by name for comparison.
func RegisterPretokenizer(pre string, p Pretokenizer) {
	pretokMu.Lock()
	defer pretokMu.Unlock()
	if pretokAlts[pre] == nil {
		pretokAlts[pre] = map[string]Pretokenizer{}
	}
	if _, dup := pretokAlts[pre][p.Name()]; dup {
		panic("tokenizer: pre-tokenizer registered twice: " + pre + " " + p.Name())
	}
	pretokAlts[pre][p.Name()] = p
	if pretoks[pre] == nil {
		pretoks[pre] = p
	}
}

// LookupPretokenizer returns the default implementation for pre.
func LookupPretokenizer(pre string) (Pretokenizer, error) {
	pretokMu.RLock()
	defer pretokMu.RUnlock()
	if p := pretoks[pre]; p != nil {
		return p, nil
	}
	if pre == "" {
		return nil, fmt.Errorf("%w: byte-level BPE without tokenizer.ggml.pre (llama.cpp's \"default\" pre-tokenizer is not implemented; supported: %s)",
			ErrUnsupported, supportedPretokenizers())
	}
	return nil, fmt.Errorf("%w: pre-tokenizer %q (supported: %s)", ErrUnsupported, pre, supportedPretokenizers())
}

// PretokenizerVariants returns every registered implementation of pre,
// sorted by name.
func PretokenizerVariants(pre string) []Pretokenizer {
	pretokMu.RLock()
	defer pretokMu.RUnlock()
	var out []Pretokenizer
	for _, p := range pretokAlts[pre] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

func supportedPretokenizers() string {
	names := make([]string, 0, len(pretoks))
	for n := range pretoks {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// llama3Names are the tokenizer.ggml.pre values llama.cpp maps to its
// LLAMA3 pre-tokenizer type.
var llama3Names = []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}

// No alternative of the Llama 3 regex can hold a newline followed by a
// non-space character, so newline-then-printable is always a word boundary.
var llama3Options = PretokenizerOptions{IgnoreMerges: true, AddBOS: true, CleanSpaces: true, NewlineEndsWord: true}

// The scanner is the default: exact and several times faster than the
// regexp2 rival (see BenchmarkPretokenize), which stays registered.
func init() {
	for _, name := range llama3Names {
		RegisterPretokenizer(name, Llama3Scanner)
		RegisterPretokenizer(name, Llama3Regexp2)
	}
}

// Llama3Scanner is the Llama 3 pre-tokenizer,
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// written as a hand scanner that takes the same decisions as llama.cpp's
// unicode_regex_split_custom_llama3.
var Llama3Scanner Pretokenizer = llama3Scanner{}

type llama3Scanner struct{}

func (llama3Scanner) Name() string                 { return "llama3/scanner" }
func (llama3Scanner) Options() PretokenizerOptions { return llama3Options }

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// asciiLower lowers ASCII letters only: the contraction rule compares with
// ASCII letters, and no other code point lowers to one of them in llama.cpp's
// table.
func asciiLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

func (llama3Scanner) Split(ends []int, cpts []rune) []int {
	n := len(cpts)
	class := func(p int) uint8 {
		if p < n {
			return classOf(cpts[p])
		}
		return 0
	}
	prev := 0
	emit := func(end int) int {
		l := end - prev
		if l > 0 {
			ends = append(ends, end)
		}
		prev = end
		return l
	}
	for pos := 0; pos < n; {
		c := cpts[pos]
		cl := classOf(c)

		// (?i:'s|'t|'re|'ve|'m|'ll|'d)
		if c == '\'' && pos+1 < n {
			next := asciiLower(cpts[pos+1])
			if next == 's' || next == 't' || next == 'm' || next == 'd' {
				pos += emit(pos + 2)
				continue
			}
			if pos+2 < n {
				nn := asciiLower(cpts[pos+2])
				if next == 'r' && nn == 'e' || next == 'v' && nn == 'e' || next == 'l' && nn == 'l' {
					pos += emit(pos + 3)
					continue
				}
			}
		}

		// [^\r\n\p{L}\p{N}]?\p{L}+
		if !isCRLF(c) && cl&classNumber == 0 {
			if cl&classLetter != 0 || class(pos+1)&classLetter != 0 {
				pos++
				for class(pos)&classLetter != 0 {
					pos++
				}
				emit(pos)
				continue
			}
		}

		// \p{N}{1,3}
		if cl&classNumber != 0 {
			ini := pos
			for class(pos)&classNumber != 0 {
				pos++
				if pos-ini >= 3 {
					emit(pos)
					ini = pos
				}
			}
			emit(pos)
			continue
		}

		// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
		cl2 := cl
		if c == ' ' {
			cl2 = class(pos + 1)
		}
		if cl2&(classSpace|classLetter|classNumber) == 0 && cl != 0 {
			if c == ' ' {
				pos++
			}
			for cl2&(classSpace|classLetter|classNumber) == 0 && cl2 != 0 {
				pos++
				cl2 = class(pos)
			}
			for pos < n && isCRLF(cpts[pos]) {
				pos++
			}
			emit(pos)
			continue
		}

		nSpace, lastCRLF := 0, 0
		for class(pos+nSpace)&classSpace != 0 {
			if isCRLF(cpts[pos+nSpace]) {
				lastCRLF = pos + nSpace + 1
			}
			nSpace++
		}
		// \s*[\r\n]+
		if lastCRLF > 0 {
			pos = lastCRLF
			emit(pos)
			continue
		}
		// \s+(?!\S)
		if nSpace > 1 && pos+nSpace < n {
			pos += nSpace - 1
			emit(pos)
			continue
		}
		// \s+
		if nSpace > 0 {
			pos += nSpace
			emit(pos)
			continue
		}
		pos++
		emit(pos)
	}
	return ends
}
