//go:build !noasm

package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/amx/amxtest"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// BenchmarkShortInCache times the batched decode products of 8 and 16
// tokens over a chunk of the interleaved layouts that stays in L2 (128 rows
// × 3072), single-threaded: amx-int8-r16s and -r16sw (where AMX is) beside
// avx512-vnni-r16-m4 and -r16-f8; TOPS counts two int8 operations a
// weight and token.
func BenchmarkShortInCache(b *testing.B) {
	if missing := cpufeat.Missing(vnniFeatures...); len(missing) > 0 {
		b.Skipf("CPU lacks %v", missing)
	}
	const rows, k = 128, 3072
	r := rand.New(rand.NewPCG(7, 8))
	w := make([]float32, rows*k)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	for _, c := range []struct {
		wt       quant.Type
		bs       int
		lay      *ledger.WeightLayout
		quantize func(dst []byte, src []float32)
	}{
		{quant.Q4_K, 144, avx512.Q4KR16Layout, quant.QuantizeQ4K},
		{quant.Q6_K, 210, avx512.Q6KR16Layout, quant.QuantizeQ6K},
	} {
		q := make([]byte, rows*k/256*c.bs)
		c.quantize(q, w)
		packed := make([]byte, c.lay.Size(rows, k))
		if err := c.lay.Repack(packed, q, rows, k); err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{8, 16} {
			xq := make([]byte, n*k/256*292)
			x := make([]float32, n*k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			quant.QuantizeQ8K(xq, x)
			xr := make([]byte, n*c.lay.ActBytes(k))
			c.lay.PrepareBatch(xr, xq, n, k)
			dst := make([]float32, n*rows)
			for _, name := range []string{"amx-int8-r16s", "amx-int8-r16sp", "amx-int8-r16sw", "avx512-vnni-r16-m4", "avx512-vnni-r16-f8"} {
				v, ok := ledger.Default.Lookup(ledger.MatVecBatchOp(c.wt), name)
				if !ok && name == "amx-int8-r16sw" {
					continue // Q4_K only
				}
				if !ok {
					b.Fatalf("matvec_batch/%s:%s is not registered", ledger.TypeName(c.wt), name)
				}
				b.Run("type="+ledger.TypeName(c.wt)+"/variant="+name+"/n="+strconv.Itoa(n), func(b *testing.B) {
					if miss := v.Missing(); len(miss) > 0 {
						b.Skipf("needs %v", miss)
					}
					f := v.Impl.(ledger.MatMul)
					for b.Loop() {
						f(dst, rows, packed, rows, xr, n, k)
					}
					b.ReportMetric(2*float64(n*rows*k)*float64(b.N)/b.Elapsed().Seconds()/1e12, "TOPS")
				})
			}
		}
	}
}

// TestShortTilePrograms pins the short-step kernels' whole AMX instruction
// streams, operands and all (GNU objdump, AT&T order): per sub-block a C
// tile zeroed, the A tile (tmm4/5) from the activations at AX with the
// tokens' stride R9, the B tile (tmm6/7) from bbuf at BX with stride 64
// (CX), one TDPBSUD; every four sub-blocks the four C tiles stored. On
// machines without AMX this is what checks the tile program; the twins
// check the rest.
func TestShortTilePrograms(t *testing.T) {
	for _, c := range []struct {
		sym  string
		addr *byte
		subs int
	}{
		{"r16sKernel", r16sKernelAddr(), 8},
		{"r16s6Kernel", r16s6KernelAddr(), 16},
		{"r16swKernel", r16swKernelAddr(), 8},
	} {
		code := unsafe.Slice(c.addr, 32768)
		out := amxtest.Objdump(t, code, "--no-show-raw-insn")
		re := regexp.MustCompile(`\t((ldtilecfg|tilezero|tileloadd|tilestored|tdp\w+|tilerelease)\b.*)$`)
		var prog []string
		for _, line := range strings.Split(out, "\n") {
			if m := re.FindStringSubmatch(line); m != nil {
				prog = append(prog, strings.Join(strings.Fields(m[1]), " "))
				if m[2] == "tilerelease" {
					break
				}
			}
		}
		want := []string{"ldtilecfg (%rax)"}
		for s := range c.subs {
			ct, a, b := s%4, 4+s%2, 6+s%2
			want = append(want,
				fmt.Sprintf("tilezero %%tmm%d", ct),
				fmt.Sprintf("tileloadd (%%rax,%%r9,1),%%tmm%d", a),
				fmt.Sprintf("tileloadd (%%rbx,%%rcx,1),%%tmm%d", b),
				fmt.Sprintf("tdpbsud %%tmm%d,%%tmm%d,%%tmm%d", b, a, ct))
			if s%4 == 3 {
				for ct := range 4 {
					want = append(want, fmt.Sprintf("tilestored %%tmm%d,(%%rbx,%%rcx,1)", ct))
				}
			}
		}
		want = append(want, "tilerelease")
		if !slices.Equal(prog, want) {
			t.Errorf("%s: AMX program\n%q\nwant\n%q", c.sym, prog, want)
		}
	}
}

// shortInputs makes a random rows × k matrix in lay (quantized by
// quantize, bs bytes a block) and n tokens' prepared activations.
func shortInputs(t testing.TB, r *rand.Rand, lay *ledger.WeightLayout, bs int, quantize func(dst []byte, src []float32), rows, k, n int) (packed, xr []byte) {
	w := make([]float32, rows*k)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	q := make([]byte, rows*k/256*bs)
	quantize(q, w)
	packed = make([]byte, lay.Size(rows, k))
	if err := lay.Repack(packed, q, rows, k); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, n*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	xq := make([]byte, n*k/256*292)
	quant.QuantizeQ8K(xq, x)
	xr = make([]byte, n*lay.ActBytes(k))
	lay.PrepareBatch(xr, xq, n, k)
	return packed, xr
}

// The wide kernel's token blocks (wideTiles tiles a call, whole tiles,
// then the rest through r16sKernel) give every token r16sKernel's bits, at
// token counts past a block and at rows that end in a partial group: the
// VPDPBUSD twins here, the AMX kernels where AMX is.
func TestShortWideMatchesShort(t *testing.T) {
	if missing := cpufeat.Missing(vnniFeatures...); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	amx := []bool{false}
	if cpufeat.Has("amx-int8") && cpufeat.AMX() == nil {
		amx = append(amx, true)
	}
	r := rand.New(rand.NewPCG(11, 12))
	lay := avx512.Q4KR16Layout
	for _, c := range []struct{ rows, k, n int }{{48, 512, 149}, {37, 256, 16 * wideTiles}, {64, 768, 16*wideTiles + 16}, {16, 256, 15}} {
		packed, xr := shortInputs(t, r, lay, 144, quant.QuantizeQ4K, c.rows, c.k, c.n)
		for _, a := range amx {
			want := make([]float32, c.n*c.rows)
			got := make([]float32, c.n*c.rows)
			Q4KR16MatMulShort(a)(want, c.rows, packed, c.rows, xr, c.n, c.k)
			Q4KR16MatMulShortWide(a)(got, c.rows, packed, c.rows, xr, c.n, c.k)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("rows %d k %d n %d amx %v: token %d row %d: wide %g, short %g", c.rows, c.k, c.n, a, i/c.rows, i%c.rows, got[i], want[i])
				}
			}
		}
	}
}

// The pipelined kernels give every token the bits of the kernels they
// pipeline, Q4_K and Q6_K, at one and several super-blocks, partial
// groups and token counts past a call's 16: the VPDPBUSD twins here, the
// AMX kernels where AMX is.
func TestShortPipeMatchesShort(t *testing.T) {
	if missing := cpufeat.Missing(vnniFeatures...); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	amx := []bool{false}
	if cpufeat.Has("amx-int8") && cpufeat.AMX() == nil {
		amx = append(amx, true)
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, f := range []struct {
		lay         *ledger.WeightLayout
		bs          int
		quantize    func(dst []byte, src []float32)
		short, pipe func(bool) ledger.MatMul
	}{
		{avx512.Q4KR16Layout, 144, quant.QuantizeQ4K, Q4KR16MatMulShort, Q4KR16MatMulShortPipe},
		{avx512.Q6KR16Layout, 210, quant.QuantizeQ6K, Q6KR16MatMulShort, Q6KR16MatMulShortPipe},
	} {
		for _, c := range []struct{ rows, k, n int }{{48, 256, 16}, {37, 512, 7}, {64, 1280, 33}, {16, 768, 1}, {32, 1024, 16}} {
			packed, xr := shortInputs(t, r, f.lay, f.bs, f.quantize, c.rows, c.k, c.n)
			for _, a := range amx {
				want := make([]float32, c.n*c.rows)
				got := make([]float32, c.n*c.rows)
				f.short(a)(want, c.rows, packed, c.rows, xr, c.n, c.k)
				f.pipe(a)(got, c.rows, packed, c.rows, xr, c.n, c.k)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s rows %d k %d n %d amx %v: token %d row %d: pipelined %g, short %g", f.lay.Name, c.rows, c.k, c.n, a, i/c.rows, i%c.rows, got[i], want[i])
					}
				}
			}
		}
	}
}

// The short kernels (and so their -f8 hybrids at every size) give every
// token avx512-vnni-r16-f8's bits, Q4_K and Q6_K: the VPDPBUSD twins here,
// the AMX kernels where AMX is.
func TestShortF8Hybrid(t *testing.T) {
	if missing := cpufeat.Missing(vnniFeatures...); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	amx := []bool{false}
	if cpufeat.Has("amx-int8") && cpufeat.AMX() == nil {
		amx = append(amx, true)
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, f := range []struct {
		lay      *ledger.WeightLayout
		bs       int
		quantize func(dst []byte, src []float32)
		short    func(bool) ledger.MatMul
		f8       ledger.MatMul
	}{
		{avx512.Q4KR16Layout, 144, quant.QuantizeQ4K, Q4KR16MatMulShortWide, avx512.Q4KR16MatMulF},
		{avx512.Q6KR16Layout, 210, quant.QuantizeQ6K, Q6KR16MatMulShort, avx512.Q6KR16MatMulF},
	} {
		for _, c := range []struct{ rows, k, n int }{{48, 256, 16}, {37, 512, 9}, {64, 1280, 33}, {32, 1024, 7}} {
			packed, xr := shortInputs(t, r, f.lay, f.bs, f.quantize, c.rows, c.k, c.n)
			want := make([]float32, c.n*c.rows)
			f.f8(want, c.rows, packed, c.rows, xr, c.n, c.k)
			for _, a := range amx {
				got := make([]float32, c.n*c.rows)
				f.short(a)(got, c.rows, packed, c.rows, xr, c.n, c.k)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s rows %d k %d n %d amx %v: token %d row %d: short %g, f8 %g", f.lay.Name, c.rows, c.k, c.n, a, i/c.rows, i%c.rows, got[i], want[i])
					}
				}
			}
		}
	}
}

// shortArgs's layout is what short_amd64.s's SA_ offsets say.
func TestShortArgsOffsets(t *testing.T) {
	var a shortArgs
	for _, c := range []struct {
		name     string
		got, off uintptr
	}{
		{"w", unsafe.Offsetof(a.w), 0}, {"x", unsafe.Offsetof(a.x), 8}, {"xstride", unsafe.Offsetof(a.xstride), 16},
		{"dst", unsafe.Offsetof(a.dst), 24}, {"lddBytes", unsafe.Offsetof(a.lddBytes), 32}, {"nb", unsafe.Offsetof(a.nb), 40},
		{"groups", unsafe.Offsetof(a.groups), 48}, {"n", unsafe.Offsetof(a.n), 56}, {"bbuf", unsafe.Offsetof(a.bbuf), 64},
		{"cbuf", unsafe.Offsetof(a.cbuf), 72}, {"cfg", unsafe.Offsetof(a.cfg), 80}, {"flags", unsafe.Offsetof(a.flags), 88},
		{"sbuf", unsafe.Offsetof(a.sbuf), 96}, {"tiles", unsafe.Offsetof(a.tiles), 104}, {"save", unsafe.Offsetof(a.save), 112},
		{"bslot", unsafe.Offsetof(a.bslot), 136}, {"cslot", unsafe.Offsetof(a.cslot), 152}, {"sslot", unsafe.Offsetof(a.sslot), 168},
	} {
		if c.got != c.off {
			t.Errorf("shortArgs.%s at %d, short_amd64.s says %d", c.name, c.got, c.off)
		}
	}
}
