package roofline

import (
	"fmt"
	"math/rand/v2"
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

// nibbleDotLane0 is nibbleDotSweep's lane 0 in Go: each line's first dword,
// its low nibbles against act[8j:8j+4] and its high against act[8j+4:8j+8],
// j the line's place in its 512-byte block.
func nibbleDotLane0(p []byte, act []int8) int32 {
	var sum int32
	for off := 0; off+64 <= len(p); off += 64 {
		j := off % 512 / 64
		for i := range 4 {
			b := p[off+i]
			sum += int32(b&15)*int32(act[8*j+i]) + int32(b>>4)*int32(act[8*j+4+i])
		}
	}
	return sum
}

func TestNibbleDotSweepComputes(t *testing.T) {
	skipWithout(t, "avx512f", "avx512vnni")
	r := rand.New(rand.NewPCG(1, 2))
	p := make([]byte, 8192)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	act := make([]int8, 64)
	for i := range act {
		act[i] = int8(r.Uint32())
	}
	want := nibbleDotLane0(p, act)
	for _, dist := range []int{0, 4096} {
		if got := nibbleDotSweep(&p[0], len(p), (*byte)(unsafe.Pointer(&act[0])), dist); got != want {
			t.Errorf("dist %d: lane 0 %d, want %d", dist, got, want)
		}
	}
	if got := nibbleDotSweep(&p[0], 0, (*byte)(unsafe.Pointer(&act[0])), 0); got != 0 {
		t.Errorf("no bytes: %d", got)
	}
}

// BenchmarkReadMix streams a huge-page buffer (DAMASCUS_MIX_MB, default 1024
// MiB) split over threads as the memory probe does: with plain loads
// (readSweep, the probe's kernel) and with nibbleDotSweep's ~7 instructions
// a line, without and with PREFETCHT0 4 and 8 KiB ahead. The GB/s of the
// variants side by side say whether a decode kernel over interleaved 4-bit
// weights could read what the probe reads (issue 20; the lent Intel host's
// Q4_K kernels read 60-75 % of it at ~20 instructions a line).
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
	act := make([]byte, 64)
	for i := range act {
		act[i] = byte(i*37 + 1)
	}
	kernels := []struct {
		name string
		run  func(p []byte)
	}{
		{"plain", func(p []byte) { readSweep(&p[0], len(p)) }},
		{"nibble-vnni", func(p []byte) { nibbleDotSweep(&p[0], len(p), &act[0], 0) }},
		{"nibble-vnni-pf4k", func(p []byte) { nibbleDotSweep(&p[0], len(p), &act[0], 4096) }},
		{"nibble-vnni-pf8k", func(p []byte) { nibbleDotSweep(&p[0], len(p), &act[0], 8192) }},
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
	for _, dist := range []int{0, 4096, 8192} {
		name := "q4k-r16"
		if dist > 0 {
			name += fmt.Sprintf("-pf%dk", dist>>10)
		}
		kernels = append(kernels, struct {
			name string
			run  func(p []byte)
		}{name, func(p []byte) {
			groups := len(p) / groupBytes
			avx512.Q4KR16MatVec(dst[:groups*avx512.Q4KR16Rows], p[:groups*groupBytes], xr, k, dist)
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
