package tokenizer

import (
	"fmt"
	"strings"
)

// bpeModel holds byte-level BPE's merges keyed by symbol ids. A symbol is a
// token id, or — for a merge part or result that is not in the vocabulary —
// a virtual id at or above len(vocabulary), so merging never needs strings.
type bpeModel struct {
	nTokens  int32
	merges   map[uint64]merge // (left<<32 | right) → merge
	byteSym  [256]int32       // symbol of each raw byte
	rawToID  map[string]int32 // raw bytes → id of the token whose byte-level text encodes them
	virtText []string         // byte-level text of virtual symbol nTokens+i
}

type merge struct {
	rank   int32
	result int32
}

func pairKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

func newBPEModel(t *Tokenizer, mergeList []string) (*bpeModel, error) {
	if mergeList == nil {
		return nil, fmt.Errorf("%w: cannot find tokenizer merges (tokenizer.ggml.merges)", ErrInvalid)
	}
	m := &bpeModel{
		nTokens: int32(len(t.pieces)),
		merges:  make(map[uint64]merge, len(mergeList)),
		rawToID: make(map[string]int32, len(t.pieces)),
	}
	for id, text := range t.pieces {
		if raw, ok := byteLevelDecode(text); ok {
			m.rawToID[string(raw)] = int32(id)
		}
	}
	virt := map[string]int32{}
	sym := func(text string) int32 {
		if id, ok := t.textToID[text]; ok {
			return id
		}
		if id, ok := virt[text]; ok {
			return id
		}
		id := m.nTokens + int32(len(m.virtText))
		virt[text] = id
		m.virtText = append(m.virtText, text)
		return id
	}
	for b := range 256 {
		m.byteSym[b] = sym(string(byteToRune[b]))
	}
	// Walk the merges from the last so that, for a pair listed twice, the
	// first rank is the one left in the map (as std::unordered_map::emplace
	// keeps the first).
	var joined []byte
	for i := len(mergeList) - 1; i >= 0; i-- {
		line := mergeList[i]
		// llama.cpp splits at the first space after the first byte; a line
		// without one becomes the pair ("", "").
		var left, right string
		if len(line) > 1 {
			if p := strings.IndexByte(line[1:], ' '); p >= 0 {
				left, right = line[:p+1], line[p+2:]
			}
		}
		joined = append(append(joined[:0], left...), right...)
		result, ok := t.textToID[string(joined)]
		if !ok {
			result = sym(string(joined))
		}
		m.merges[pairKey(sym(left), sym(right))] = merge{rank: int32(i), result: result}
	}
	return m, nil
}

// encodeWord appends the ids of one pre-tokenized word (raw bytes).
func (t *Tokenizer) bpeWord(dst []int32, word string, s *bpeScratch) []int32 {
	m := t.bpe
	if t.ignoreMerges {
		if id, ok := m.rawToID[word]; ok {
			return append(dst, id)
		}
	}
	syms := s.syms[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, m.byteSym[word[i]])
	}
	if len(syms) <= linearMergeMax {
		syms = m.mergeLinear(syms)
	} else {
		syms = m.mergeHeap(syms, s)
	}
	s.syms = syms
	for _, id := range syms {
		if id < m.nTokens {
			dst = append(dst, id)
			continue
		}
		// Not a token: llama.cpp looks up each byte of the symbol's
		// byte-level text as a one-byte token and drops those it lacks.
		text := m.virtText[id-m.nTokens]
		for i := 0; i < len(text); i++ {
			if b, ok := t.textToID[text[i:i+1]]; ok {
				dst = append(dst, b)
			}
		}
	}
	return dst
}

// linearMergeMax is the longest word merged by repeated scans; longer ones
// use a heap. Both apply the lowest-rank pair first, leftmost on ties.
const linearMergeMax = 48

func (m *bpeModel) mergeLinear(syms []int32) []int32 {
	for len(syms) > 1 {
		best, bestRank, bestResult := -1, int32(0), int32(0)
		for i := 0; i+1 < len(syms); i++ {
			mg, ok := m.merges[pairKey(syms[i], syms[i+1])]
			if ok && (best < 0 || mg.rank < bestRank) {
				best, bestRank, bestResult = i, mg.rank, mg.result
			}
		}
		if best < 0 {
			break
		}
		syms[best] = bestResult
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	return syms
}

// bpeScratch is per-call working memory.
type bpeScratch struct {
	syms  []int32
	nodes []bpeNode
	heap  queue[bigram]
}

type bpeNode struct {
	id         int32
	prev, next int32 // indices, -1 at the ends
	dead       bool
}

type bigram struct {
	rank, left, right int32
	lid, rid          int32 // symbol ids when queued, to detect stale entries
	result            int32
}

// before orders merges by rank, then by left position, like llama.cpp's
// llm_bigram_bpe comparator.
func (a bigram) before(b bigram) bool {
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

func (m *bpeModel) mergeHeap(syms []int32, s *bpeScratch) []int32 {
	nodes := s.nodes[:0]
	for i, id := range syms {
		nodes = append(nodes, bpeNode{id: id, prev: int32(i - 1), next: int32(i + 1)})
	}
	nodes[len(nodes)-1].next = -1
	h := s.heap[:0]
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		if mg, ok := m.merges[pairKey(nodes[l].id, nodes[r].id)]; ok {
			h.push(bigram{rank: mg.rank, left: l, right: r, lid: nodes[l].id, rid: nodes[r].id, result: mg.result})
		}
	}
	for i := 1; i < len(nodes); i++ {
		try(int32(i-1), int32(i))
	}
	for len(h) > 0 {
		b := h.pop()
		l, r := &nodes[b.left], &nodes[b.right]
		if l.dead || r.dead || l.id != b.lid || r.id != b.rid {
			continue
		}
		l.id = b.result
		r.dead = true
		l.next = r.next
		if r.next >= 0 {
			nodes[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	syms = syms[:0]
	for i := int32(0); i >= 0; i = nodes[i].next {
		syms = append(syms, nodes[i].id)
	}
	s.nodes, s.heap = nodes, h
	return syms
}
