package roofline

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512" // the Q4_K decode kernels beside the probe
)

// BenchmarkReadMix streams a huge-page buffer (DAMASCUS_MIX_MB, default 1024
// MiB) split over threads as the memory probe does: with plain loads
// (readSweep, the probe's kernel), with the interleaved Q4_K experiment's
// kernel (variants/avx512's q4kr16.go, ~6.6 instructions a line; without
// and with PREFETCHT0 4 and 8 KiB ahead) and with the shipped Q4_K decode
// kernels (~20). The GB/s side by side say whether a decode kernel over
// interleaved 4-bit weights reads what the probe reads where the shipped
// ones do not (issue 20; on the lent Intel host they read 60-75 % of it).
func BenchmarkReadMix(b *testing.B) {
	if reason := needs("avx512f", "avx512vnni"); reason != "" {
		b.Skip(reason)
	}
	mb := 1024
	if s := os.Getenv("DAMASCUS_MIX_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil || mb < 1 {
			b.Fatalf("DAMASCUS_MIX_MB=%q: want a positive number of MiB", s)
		}
	}
	size := mb << 20
	buf, err := mapBuffer(size, PagesHuge)
	if err != nil {
		b.Skip(err)
	}
	defer buf.unmap()
	fill(buf.data)
	kernels := []struct {
		name string
		run  func(p []byte)
	}{
		{"plain", func(p []byte) { readSweep(&p[0], len(p)) }},
		{"plain-2s", func(p []byte) { h := len(p) / 2 &^ 255; readSweep2(&p[0], &p[h], h) }},
		{"plain-pf1k", func(p []byte) { readSweepPf(&p[0], len(p), 1024) }},
		{"plain-pf4k", func(p []byte) { readSweepPf(&p[0], len(p), 4096) }},
	}
	// The shipped Q4_K decode kernels over the same bytes as rows of the
	// 3B's 3072 columns (d and dmin set to 1 in every super-block).
	const k = 3072
	rowSize := k / quant.Q4_K.BlockSize() * quant.Q4_K.TypeSize()
	for i := 0; i+144 <= size; i += 144 {
		copy(buf.data[i:], []byte{0x00, 0x3c, 0x00, 0x3c})
	}
	xq := make([]byte, k/quant.Q8_K.BlockSize()*quant.Q8_K.TypeSize())
	for b := 0; b < len(xq); b += quant.Q8_K.TypeSize() {
		copy(xq[b:], []byte{0x00, 0x00, 0x80, 0x3f}) // d = 1.0
	}
	dst := make([]float32, size/rowSize+1)
	// The interleaved layout's kernel (variants/avx512's experiment) over the
	// same bytes as 16-row groups of 3072 columns, d and dmin set to 1.
	const groupBytes = k / 256 * avx512.Q4KR16Bytes
	for i := 0; i+groupBytes <= size; i += avx512.Q4KR16Bytes {
		for j := 0; j < 64; j += 2 {
			buf.data[i+j], buf.data[i+j+1] = 0x00, 0x3c
		}
	}
	xr := make([]byte, k/256*avx512.Q4KR16ActBytes)
	avx512.PrepareQ4KR16(xr, xq, k)
	for _, dist := range mixDists() {
		name := "q4k-r16"
		if dist > 0 {
			name += fmt.Sprintf("-pf%d", dist) // bytes; whole KiB as before: -pf4k
			if dist%1024 == 0 {
				name = fmt.Sprintf("q4k-r16-pf%dk", dist>>10)
			}
		}
		kernels = append(kernels, struct {
			name string
			run  func(p []byte)
		}{name, func(p []byte) {
			groups := len(p) / groupBytes
			avx512.Q4KR16MatVec(dst[:groups*avx512.Q4KR16Rows], p[:groups*groupBytes], xr, k, dist)
		}})
	}
	// The interleaved layout's other matvecs, over the same groups.
	for _, name := range []string{"avx512-vnni-r16-h", "avx512-vnni-r16-hm", "avx512-vnni-r16-hmx", "avx512-vnni-r16-hmx-pf4k"} {
		v, ok := ledger.Lookup("matvec/q4_k", name)
		if !ok || !v.Available() {
			continue
		}
		mv := v.Impl.(ledger.MatVec)
		kernels = append(kernels, struct {
			name string
			run  func(p []byte)
		}{"q4k-" + strings.TrimPrefix(name, "avx512-vnni-"), func(p []byte) {
			groups := len(p) / groupBytes
			mv(dst[:groups*avx512.Q4KR16Rows], p[:groups*groupBytes], xr, k)
		}})
	}
	for _, name := range []string{"avx512-vnni-pf4k", "avx512-vnni-pf8k", "avx512-vnni-x-pf4k", "avx512-vnni-pf8k-nta"} {
		v, ok := ledger.Lookup("matvec/q4_k", name)
		if !ok || !v.Available() {
			continue
		}
		mv := v.Impl.(ledger.MatVec)
		kernels = append(kernels, struct {
			name string
			run  func(p []byte)
		}{"q4k-" + strings.TrimPrefix(name, "avx512-vnni-"), func(p []byte) {
			rows := len(p) / rowSize
			off := (uintptr(unsafe.Pointer(&p[0])) - uintptr(unsafe.Pointer(&buf.data[0]))) / uintptr(rowSize)
			mv(dst[off:int(off)+rows], p[:rows*rowSize], xq, k)
		}})
	}
	for _, threads := range []int{1, 2} {
		parts := split(buf.data, threads)
		for _, k := range kernels {
			b.Run(fmt.Sprintf("variant=%s/threads=%d", k.name, threads), func(b *testing.B) {
				pass := func() time.Duration {
					return parallel(len(parts), func(i int) {
						for p := parts[i]; len(p) > 0; {
							n := min(len(p), sweepChunk)
							k.run(p[:n])
							p = p[n:]
						}
					})
				}
				pass() // warm-up: TLB and caches in steady state
				var total time.Duration
				b.ResetTimer()
				for range b.N {
					total += pass()
				}
				b.ReportMetric(float64(size)*float64(b.N)/total.Seconds()/1e9, "GB/s")
			})
		}
	}
}

// mixDists is the software prefetch distances of the q4k-r16 rows:
// DAMASCUS_MIX_PF (comma-separated bytes) or 0, 4096, 8192.
func mixDists() []int {
	s := os.Getenv("DAMASCUS_MIX_PF")
	if s == "" {
		return []int{0, 4096, 8192}
	}
	var d []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			panic(fmt.Sprintf("DAMASCUS_MIX_PF=%q: want byte distances", s))
		}
		d = append(d, n)
	}
	return d
}
