package tokenizer

// A queue is a binary min-heap over a slice of candidate merges, ordered by
// their before method (the BPE and SentencePiece merge loops each pop the
// best pair first).
type queue[T interface{ before(T) bool }] []T

func (q *queue[T]) push(x T) {
	*q = append(*q, x)
	s := *q
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (q *queue[T]) pop() T {
	s := *q
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].before(s[small]) {
			small = l
		}
		if r < len(s) && s[r].before(s[small]) {
			small = r
		}
		if small == i {
			break
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
	*q = s
	return top
}
