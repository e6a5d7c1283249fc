// Package q8pack writes Q8_0 activation rows as the token blocks that the
// Q8_0/Q4_0 GEMMs (variants/avx512's and variants/avx2's) read: per block
// of Tokens tokens and 32-value block, the tokens' quants side by side,
// then each token's offset term and d_x.
package q8pack

import (
	"encoding/binary"
	"math"

	"github.com/damascus-llm/damascus/quant"
)

// Layout places a token block's parts: Tokens tokens, BlockBytes bytes a
// 32-value block, token t's quants at 32t, its −Offset·Σx (int32) at
// OffsetAt+4t, its d_x (float32) at DAt+4t.
type Layout struct {
	Tokens, BlockBytes, OffsetAt, DAt int
	Offset                            int32
}

const q80Bytes = 34

// Pack writes the Q8_0 rows xq of n tokens (nb blocks each) into act,
// (n+Tokens−1)/Tokens·nb blocks of l; tokens past n are zero (their d_x 0).
func (l Layout) Pack(act, xq []byte, n, nb int) {
	clear(act)
	for t := range n {
		tb, tt := t/l.Tokens, t%l.Tokens
		row := xq[t*nb*q80Bytes:]
		for b := range nb {
			blk := row[b*q80Bytes : (b+1)*q80Bytes]
			dst := act[(tb*nb+b)*l.BlockBytes:]
			copy(dst[32*tt:32*tt+32], blk[2:])
			if l.Offset != 0 {
				var sum int32
				for _, q := range blk[2:] {
					sum += int32(int8(q))
				}
				binary.LittleEndian.PutUint32(dst[l.OffsetAt+4*tt:], uint32(-l.Offset*sum))
			}
			binary.LittleEndian.PutUint32(dst[l.DAt+4*tt:], math.Float32bits(quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))))
		}
	}
}

// Grow returns b with length n, reallocated only when its capacity is short.
func Grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}
