package tokenizer

import (
	"github.com/dlclark/regexp2/v2"
)

// llama3Pattern is the Llama 3 pre-tokenizer regex in the form llama.cpp
// uses (case-insensitive group spelled out, so no engine case folding can
// differ).
const llama3Pattern = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Llama3Regexp2 is the Llama 3 pre-tokenizer run by a backtracking regex
// engine with lookahead (github.com/dlclark/regexp2), the rival of
// Llama3Scanner. It stays registered under "llama3/regexp2" for comparison.
var Llama3Regexp2 Pretokenizer = &regexpPretokenizer{
	name: "llama3/regexp2",
	re:   regexp2.MustCompile(llama3Pattern),
	opts: llama3Options,
}

type regexpPretokenizer struct {
	name string
	re   *regexp2.Regexp
	opts PretokenizerOptions
}

func (p *regexpPretokenizer) Name() string                 { return p.name }
func (p *regexpPretokenizer) Options() PretokenizerOptions { return p.opts }

// Split follows llama.cpp's unicode_regex_split_stl: every match is a word,
// and so is any text between matches.
func (p *regexpPretokenizer) Split(ends []int, cpts []rune) []int {
	last := 0
	err := p.re.FindRunesMatches(cpts, 0, func(m regexp2.MatchView) bool {
		i, n, ok := m.GroupRange(0)
		if !ok || n == 0 {
			return true
		}
		if i > last {
			ends = append(ends, i)
		}
		ends = append(ends, i+n)
		last = i + n
		return true
	})
	if err != nil {
		// Only a match timeout can fail, and none is set.
		panic("tokenizer: regexp2 pre-tokenizer: " + err.Error())
	}
	if last < len(cpts) {
		ends = append(ends, len(cpts))
	}
	return ends
}
