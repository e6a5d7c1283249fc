package promoted

import (
	"fmt"
	"os"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// R16Env opts the engine's single-token Q4_K and Q6_K products into the
// interleaved-layout experiment (variants/avx512's q4kr16.go and
// q6kr16.go; issues 19 and 20): "1" or "nopf" without software prefetch,
// "pf4k" or "pf8k" with it. Each such matrix is then repacked once per
// model beside the file's layout (the prefill keeps reading that), so peak
// RSS grows by those weights: a measurement aid until the layout has a
// seam in the kernel contract, never a default.
const R16Env = "DAMASCUS_R16"

// R16Kernels are one weight type's interleaved kernels, as R16Mode returns
// them: Repack lays out rows (a multiple of GroupRows) of k values,
// GroupBytes(k) bytes a group; Prepare lays out Q8_K activations in
// ActBytes(k) bytes; MatVec computes rows prefetching Dist bytes ahead.
type R16Kernels struct {
	Repack               func(dst, src []byte, rows, k int) error
	Prepare              func(dst, xq []byte, k int)
	MatVec               func(dst []float32, w, xr []byte, k, dist int)
	GroupBytes, ActBytes func(k int) int
	GroupRows, Dist      int
}

// R16Mode returns the experiment's kernels per weight type when
// $DAMASCUS_R16 asks for them (nil when unset), or an error naming a bad
// value or what this processor lacks.
func R16Mode() (map[quant.Type]*R16Kernels, error) {
	v := os.Getenv(R16Env)
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
		return nil, fmt.Errorf("%s=%q: want 1, nopf, pf4k or pf8k", R16Env, v)
	}
	if !avx512.HaveQ4KR16 {
		return nil, fmt.Errorf("%s: this build has no amd64 assembly (noasm, or not amd64)", R16Env)
	}
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		return nil, fmt.Errorf("%s: the CPU lacks %v", R16Env, missing)
	}
	per := func(bytes int) func(k int) int { return func(k int) int { return k / quant.QK_K * bytes } }
	return map[quant.Type]*R16Kernels{
		quant.Q4_K: {Repack: avx512.RepackQ4KR16, Prepare: avx512.PrepareQ4KR16, MatVec: avx512.Q4KR16MatVec,
			GroupBytes: per(avx512.Q4KR16Bytes), ActBytes: per(avx512.Q4KR16ActBytes), GroupRows: avx512.Q4KR16Rows, Dist: dist},
		quant.Q6_K: {Repack: avx512.RepackQ6KR16, Prepare: avx512.PrepareQ6KR16, MatVec: avx512.Q6KR16MatVec,
			GroupBytes: per(avx512.Q6KR16Bytes), ActBytes: per(avx512.Q6KR16ActBytes), GroupRows: avx512.Q4KR16Rows, Dist: dist},
	}, nil
}
