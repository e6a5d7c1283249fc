package serve

import (
	"math"
	"strconv"

	"github.com/damascus-llm/damascus/model/tokenizer"
)

// A tokenLogprob is a generated token's log-probability and the most likely
// tokens' at its position. They are the model's own: the log-softmax of the
// raw logits, before the request's bias, penalties and temperature (as
// llama-server reports them, and OpenAI's API describes them).
type tokenLogprob struct {
	id  int32
	lp  float64
	top []altLogprob // most likely first
}

type altLogprob struct {
	id int32
	lp float64
}

// logprobsOf is token id's entry at a position with logits row, with the
// top most likely tokens. A NaN logit counts as -Inf, as the sampler reads it.
func logprobsOf(row []float32, id int32, top int) tokenLogprob {
	logit := func(i int) float64 {
		if l := row[i]; l == l {
			return float64(l)
		}
		return math.Inf(-1)
	}
	hi := math.Inf(-1)
	for i := range row {
		hi = max(hi, logit(i))
	}
	var sum float64
	for i := range row {
		sum += math.Exp(logit(i) - hi)
	}
	lse := hi + math.Log(sum)
	e := tokenLogprob{id: id, lp: logit(int(id)) - lse}
	if top > 0 {
		// The top logits by insertion into a short sorted list; ties keep
		// the lower id first.
		e.top = make([]altLogprob, 0, top+1)
		for i := range row {
			l := logit(i)
			if len(e.top) == top && l <= e.top[top-1].lp {
				continue
			}
			k := len(e.top)
			for k > 0 && e.top[k-1].lp < l {
				k--
			}
			e.top = append(e.top, altLogprob{})
			copy(e.top[k+1:], e.top[k:])
			e.top[k] = altLogprob{id: int32(i), lp: l}
			if len(e.top) > top {
				e.top = e.top[:top]
			}
		}
		for k := range e.top {
			e.top[k].lp -= lse
		}
	}
	return e
}

// chatLogprobs is a chat choice's "logprobs": OpenAI's content list.
func chatLogprobs(tok *tokenizer.Tokenizer, entries []tokenLogprob) map[string]any {
	content := make([]any, len(entries))
	for i, e := range entries {
		top := make([]any, len(e.top))
		for k, a := range e.top {
			top[k] = tokenEntry(tok, a.id, a.lp)
		}
		c := tokenEntry(tok, e.id, e.lp)
		c["top_logprobs"] = top
		content[i] = c
	}
	return map[string]any{"content": content, "refusal": nil}
}

// tokenEntry is a token's text, log-probability and bytes (the text may be
// part of a UTF-8 character: the bytes are exact).
func tokenEntry(tok *tokenizer.Tokenizer, id int32, lp float64) map[string]any {
	piece, _ := tok.Piece(id, true)
	b := make([]int, len(piece))
	for i := range len(piece) {
		b[i] = int(piece[i])
	}
	return map[string]any{"token": piece, "logprob": finite(lp), "bytes": b}
}

// completionLogprobs is a text completion's "logprobs": the legacy lists
// (tokens, token_logprobs, top_logprobs as token → logprob). text_offset is
// left out: its origin (the prompt's start in OpenAI's API) is not this
// server's to guess.
func completionLogprobs(tok *tokenizer.Tokenizer, entries []tokenLogprob) map[string]any {
	tokens := make([]string, len(entries))
	lps := make([]float64, len(entries))
	tops := make([]map[string]float64, len(entries))
	for i, e := range entries {
		tokens[i], _ = tok.Piece(e.id, true)
		lps[i] = finite(e.lp)
		tops[i] = map[string]float64{}
		for _, a := range e.top {
			p, _ := tok.Piece(a.id, true)
			if _, seen := tops[i][p]; !seen { // the likelier of two tokens with one text
				tops[i][p] = finite(a.lp)
			}
		}
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops}
}

// finite keeps the JSON encodable: -Inf (a token the model rules out)
// becomes the most negative float64.
func finite(lp float64) float64 {
	if math.IsInf(lp, -1) || lp != lp {
		return -math.MaxFloat64
	}
	return lp
}

// tokenID reads a logit_bias key: a token id in decimal.
func tokenID(key string) (int, bool) {
	id, err := strconv.Atoi(key)
	return id, err == nil && id >= 0
}
