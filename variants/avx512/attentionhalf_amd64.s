//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"
#include "gqa_amd64.h"

// Decode attention over a 16-bit KV cache: attnScores4AVX512 and
// attnWeightedSum4AVX512 with each cached key and value element converted
// from F16 (VCVTPH2PS) or BF16 (zero-extended and shifted into the high
// half) as it is loaded, exactly, so the arithmetic is theirs bit for bit
// on the widened rows, without writing the widened rows anywhere. Strides
// and offsets of k and v are in bytes of 16-bit elements.

// func attnScores4F16(p, q *float32, k *uint16, stride, headDim, n int, scale float32)
TEXT ·attnScores4F16(SB), NOSPLIT, $0-52
	SCORES4(LOAD_F16, 32, f16Pos, f16Lane)

// func attnScores4BF16(p, q *float32, k *uint16, stride, headDim, n int, scale float32)
TEXT ·attnScores4BF16(SB), NOSPLIT, $0-52
	SCORES4(LOAD_BF16, 32, bf16Pos, bf16Lane)

// func attnWeightedSum4F16(out, p *float32, v *uint16, stride, headDim, n int)
TEXT ·attnWeightedSum4F16(SB), NOSPLIT, $0-48
	WSUM4(LOAD_F16, 32, 64, 96, 128, f16Block, f16WPos)

// func attnWeightedSum4BF16(out, p *float32, v *uint16, stride, headDim, n int)
TEXT ·attnWeightedSum4BF16(SB), NOSPLIT, $0-48
	WSUM4(LOAD_BF16, 32, 64, 96, 128, bf16Block, bf16WPos)

// func attnScores4x4F16(p, q *float32, k *uint16, stride, headDim, n, ldp int, scale float32)
TEXT ·attnScores4x4F16(SB), NOSPLIT, $0-60
	SCORES4X4(LOAD4_F16, 32, f16T4Pass, f16T4Lane, f16T4Done)

// func attnScores4x4BF16(p, q *float32, k *uint16, stride, headDim, n, ldp int, scale float32)
TEXT ·attnScores4x4BF16(SB), NOSPLIT, $0-60
	SCORES4X4(LOAD4_BF16, 32, bf16T4Pass, bf16T4Lane, bf16T4Done)

// func attnWeightedSum3WF16(out, p *float32, v *uint16, stride, headDim, n int)
//
// Three query heads' weighted sums over one 16-bit value head, walking the
// positions once per 128 values of the head (WSUM3W); headDim a multiple
// of 128. The bits of attnWeightedSum4F16's first three heads.
TEXT ·attnWeightedSum3WF16(SB), NOSPLIT, $0-48
	WSUM3W(LOAD4_F16, 32, 64, 96, 128, 160, 192, 224, 256, W3PF_NONE, 0, f16W3Block, f16W3Pos)

// func attnWeightedSum3WBF16(out, p *float32, v *uint16, stride, headDim, n int)
TEXT ·attnWeightedSum3WBF16(SB), NOSPLIT, $0-48
	WSUM3W(LOAD4_BF16, 32, 64, 96, 128, 160, 192, 224, 256, W3PF_NONE, 0, bf16W3Block, bf16W3Pos)

// func attnWeightedSum3WPfF16(out, p *float32, v *uint16, stride, headDim, n int)
//
// attnWeightedSum3WF16 with each position's PREFETCHT0 of the block's
// 256 bytes 32 rows ahead.
TEXT ·attnWeightedSum3WPfF16(SB), NOSPLIT, $0-48
	WSUM3W(LOAD4_F16, 32, 64, 96, 128, 160, 192, 224, 256, W3PF_256, 32, f16W3PBlock, f16W3PPos)

// func attnWeightedSum3WPfBF16(out, p *float32, v *uint16, stride, headDim, n int)
TEXT ·attnWeightedSum3WPfBF16(SB), NOSPLIT, $0-48
	WSUM3W(LOAD4_BF16, 32, 64, 96, 128, 160, 192, 224, 256, W3PF_256, 32, bf16W3PBlock, bf16W3PPos)
