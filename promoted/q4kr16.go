package promoted

import (
	"fmt"
	"os"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// Q4KR16Env opts the engine's single-token Q4_K products into the
// interleaved-layout experiment (variants/avx512's q4kr16.go; issues 19
// and 20): "1" or "nopf" without software prefetch, "pf4k" or "pf8k" with
// it. Each Q4_K matrix is then repacked once per model beside the file's
// layout (the prefill keeps reading that), so peak RSS grows by the Q4_K
// weights: a measurement aid until the layout has a seam in the kernel
// contract, never a default.
const Q4KR16Env = "DAMASCUS_Q4K_R16"

// Q4KR16 is the experiment's kernel set, as Q4KR16Mode returns it.
type Q4KR16 struct {
	Repack  func(dst, src []byte, rows, k int) error
	Prepare func(dst, xq []byte, k int)
	MatVec  func(dst []float32, w, xr []byte, k, dist int)
	// Dist is the prefetch distance in bytes (0: none); GroupRows, the
	// rows a group interleaves; GroupBytes(k) the bytes of one group of
	// rows of k values; ActBytes(k) the activations' layout.
	Dist                 int
	GroupRows            int
	GroupBytes, ActBytes func(k int) int
}

// Q4KR16Mode returns the experiment's kernels when $DAMASCUS_Q4K_R16 asks
// for them (nil when unset), or an error naming a bad value or what this
// processor lacks.
func Q4KR16Mode() (*Q4KR16, error) {
	v := os.Getenv(Q4KR16Env)
	dist := 0
	switch v {
	case "":
		return nil, nil
	case "1", "nopf":
	case "pf4k":
		dist = 4096
	case "pf8k":
		dist = 8192
	default:
		return nil, fmt.Errorf("%s=%q: want 1, nopf, pf4k or pf8k", Q4KR16Env, v)
	}
	if !avx512.HaveQ4KR16 {
		return nil, fmt.Errorf("%s: this build has no amd64 assembly (noasm, or not amd64)", Q4KR16Env)
	}
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		return nil, fmt.Errorf("%s: the CPU lacks %v", Q4KR16Env, missing)
	}
	return &Q4KR16{
		Repack: avx512.RepackQ4KR16, Prepare: avx512.PrepareQ4KR16, MatVec: avx512.Q4KR16MatVec,
		Dist: dist, GroupRows: avx512.Q4KR16Rows,
		GroupBytes: func(k int) int { return k / 256 * avx512.Q4KR16Bytes },
		ActBytes:   func(k int) int { return k / 256 * avx512.Q4KR16ActBytes },
	}, nil
}
