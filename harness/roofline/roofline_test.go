package roofline

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/amx"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/internal/hugemem"
)

func skipWithout(t *testing.T, features ...string) {
	t.Helper()
	if reason := needs(features...); reason != "" {
		t.Skip(reason)
	}
}

func TestReadSweepSumsEveryWord(t *testing.T) {
	skipWithout(t, "avx512f")
	for _, n := range []int{0, 512, 1024, 512 * 37, 1 << 20} {
		b := make([]byte, n+512)
		fill(b)
		var want uint64
		words := unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n/8)
		for _, w := range words {
			want += w
		}
		if got := readSweep(&b[0], n); got != want {
			t.Errorf("readSweep(%d bytes) = %#x, want %#x", n, got, want)
		}
		if n == 0 {
			continue
		}
		for _, k := range sweepKinds {
			if got := k.read(b[:n]); got != want {
				t.Errorf("sweep kind %s over %d bytes = %#x, want %#x", k.name, n, got, want)
			}
		}
	}
}

func TestFMALoopComputes(t *testing.T) {
	skipWithout(t, "avx512f")
	if got := fmaLoop(1000, 0.5, 3); got != 1500 {
		t.Fatalf("fmaLoop(1000, 0.5, 3) = %g, want 1500", got)
	}
	if got := fmaLoop(0, 1, 1); got != 0 {
		t.Fatalf("fmaLoop(0) = %g, want 0", got)
	}
}

func TestVNNILoopComputes(t *testing.T) {
	skipWithout(t, "avx512f", "avx512vnni")
	u := [4]uint8{1, 200, 3, 255}  // unsigned operand
	s := [4]int8{-1, 2, -128, 127} // signed operand
	var dot int32
	for i := range u {
		dot += int32(u[i]) * int32(s[i])
	}
	pack := func(b [4]byte) uint32 {
		return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	us := pack(u)
	ss := pack([4]byte{byte(s[0]), byte(s[1]), byte(s[2]), byte(s[3])})
	if got, want := vnniLoop(100, us, ss), 100*dot; got != want {
		t.Fatalf("vnniLoop = %d, want %d", got, want)
	}
}

// tileProducts returns, in float64, the four products A[i]·B[j] the AMX
// loops accumulate: A tiles are row-major (k values a row), B tiles packed
// with perDword consecutive-k values per column group.
func tileProducts[T any](a, b []T, k, perDword int, val func(T) float64) [4][amx.M * amx.N]float64 {
	var out [4][amx.M * amx.N]float64
	for ai := 0; ai < 2; ai++ {
		for bj := 0; bj < 2; bj++ {
			at, bt := a[ai*amx.M*k:], b[bj*amx.M*k:]
			for m := 0; m < amx.M; m++ {
				for n := 0; n < amx.N; n++ {
					var sum float64
					for kk := 0; kk < k; kk++ {
						// packed B: row kk/perDword, column group n, element kk%perDword
						sum += val(at[m*k+kk]) * val(bt[(kk/perDword)*amx.N*perDword+n*perDword+kk%perDword])
					}
					out[ai*2+bj][m*amx.N+n] = sum
				}
			}
		}
	}
	return out
}

func TestAMXInt8LoopComputes(t *testing.T) {
	checkAMXLoop(t, "amx-int8", amxInt8Operands, amxInt8Loop, amx.KInt8, 4, func(v int8) float64 { return float64(v) })
}

func TestAMXBF16LoopComputes(t *testing.T) {
	bf := func(v uint16) float64 { return float64(math.Float32frombits(uint32(v) << 16)) }
	checkAMXLoop(t, "amx-bf16", amxBF16Operands, amxBF16Loop, amx.KBF16, 2, bf)
}

// checkAMXLoop runs an AMX probe's loop (it needs feature) for three rounds
// over its operands and checks the accumulated tiles against the exact
// products (k values per dot product, perDword of them to a 32-bit word).
func checkAMXLoop[E any, T int32 | float32](t *testing.T, feature string, operands func() (*amx.Config, []E, []E), loop amxLoop[E, T], k, perDword int, val func(E) float64) {
	skipWithout(t, feature)
	cfg, a, b := operands()
	var c [4 * amx.M * amx.N]T
	const iters = 3
	loop(&cfg[0], &a[0], &b[0], &c[0], iters)
	checkTiles(t, c[:], tileProducts(a, b, k, perDword, val), iters)
}

// checkTiles compares the four accumulated tiles c (M×N each, row-major)
// with iters times their exact products want.
func checkTiles[T int32 | float32](t *testing.T, c []T, want [4][amx.M * amx.N]float64, iters int) {
	t.Helper()
	for tile := range want {
		for i, w := range want[tile] {
			if got := c[tile*amx.M*amx.N+i]; float64(got) != float64(iters)*w {
				t.Fatalf("tile %d C[%d] = %v, want %g", tile, i, got, float64(iters)*w)
			}
		}
	}
}

func TestSplitCoversBuffer(t *testing.T) {
	b := make([]byte, 512*10+100)
	for n := 1; n <= 4; n++ {
		parts := split(b, n)
		total := 0
		for _, p := range parts {
			if len(p)%sweepBlock != 0 {
				t.Fatalf("n=%d: part of %d bytes is not whole sweep blocks", n, len(p))
			}
			total += len(p)
		}
		if total != 512*10 {
			t.Fatalf("n=%d: parts cover %d bytes, want %d", n, total, 512*10)
		}
	}
}

var quick = Options{MemBytes: 8 << 20, Threads: []int{1, 2}, Repeats: 2, ComputeTime: 5 * time.Millisecond}

// checkMeasurements: every point either measured a positive finite rate or
// says why it skipped.
func checkMeasurements(t *testing.T, ms []Measurement, probe string) {
	t.Helper()
	if len(ms) != len(quick.Threads) {
		t.Fatalf("%s: %d measurements, want %d", probe, len(ms), len(quick.Threads))
	}
	for _, m := range ms {
		if m.Probe != probe {
			t.Errorf("probe %q, want %q", m.Probe, probe)
		}
		if m.Skipped != "" {
			t.Logf("%s threads=%d skipped: %s", probe, m.Threads, m.Skipped)
			if m.Best != 0 || m.PerSecond != 0 {
				t.Errorf("%s: skipped but reports numbers: %+v", probe, m)
			}
			continue
		}
		if !(m.Best > 0) || !finite(m.Best) || !(m.Median > 0) || !finite(m.Median) || m.Median > m.Best {
			t.Errorf("%s threads=%d: implausible best %g median %g", probe, m.Threads, m.Best, m.Median)
		}
		t.Logf("%s pages=%s threads=%d: best %.4g %s (noisy, tiny sizes)", probe, m.Pages, m.Threads, m.Best, m.Unit)
	}
}

func TestMemoryReadProbe(t *testing.T) {
	ms4k := MemoryRead(quick, Pages4K)
	checkMeasurements(t, ms4k, ProbeMemRead)
	for _, m := range ms4k {
		if m.Skipped == "" && m.HugePageBytes > 0 {
			t.Errorf("4k buffer reports %d bytes of huge pages despite MADV_NOHUGEPAGE", m.HugePageBytes)
		}
	}
	for _, m := range ms4k {
		if m.Skipped != "" {
			continue
		}
		if len(m.Sweeps) != len(sweepKinds) || m.Sweeps[m.Sweep] != m.Best {
			t.Errorf("threads=%d: sweep %q best %.4g, sweeps %v: want every kind's best, the measured one the fastest", m.Threads, m.Sweep, m.Best, m.Sweeps)
		}
		for kind, gbps := range m.Sweeps {
			if gbps > m.Best {
				t.Errorf("threads=%d: kind %s read %.4g GB/s, above the measured %s's %.4g", m.Threads, kind, gbps, m.Sweep, m.Best)
			}
		}
	}
	msHuge := MemoryRead(quick, PagesHuge)
	checkMeasurements(t, msHuge, ProbeMemRead)
	if len(msHuge) > 0 && msHuge[0].Skipped == "" {
		t.Logf("huge-page buffer: %d of %d bytes on huge pages (THP %q)", msHuge[0].HugePageBytes, msHuge[0].BufferBytes, hugemem.SelectedTHPMode())
	}
}

func TestComputeProbes(t *testing.T) {
	checkMeasurements(t, FP32FMA(quick), ProbeFP32FMA)
	checkMeasurements(t, Int8VNNI(quick), ProbeInt8VNNI)
	checkMeasurements(t, AMXInt8(quick), ProbeAMXInt8)
	checkMeasurements(t, AMXBF16(quick), ProbeAMXBF16)
}

func TestAMXProbeSkipsWithReason(t *testing.T) {
	err := cpufeat.AMX()
	if err == nil {
		t.Skip("AMX is usable here")
	}
	for _, m := range AMXInt8(quick) {
		if !strings.Contains(m.Skipped, "AMX unavailable") {
			t.Fatalf("AMX probe without AMX: skipped=%q", m.Skipped)
		}
	}
}

func TestReportRendering(t *testing.T) {
	r := Report{Measurements: []Measurement{
		{Probe: ProbeFP32FMA, Threads: 1, Best: 200, Median: 190, Unit: "GFLOP/s", PerSecond: 200e9},
		{Probe: ProbeFP32FMA, Threads: 2, Best: 380, Median: 370, Unit: "GFLOP/s", PerSecond: 380e9},
		{Probe: ProbeAMXInt8, Threads: 1, Unit: "TOPS", Skipped: "unavailable: CPU/OS lacks amx-int8"},
	}}
	if peak, ok := r.Peak(ProbeFP32FMA); !ok || peak != 380e9 {
		t.Errorf("Peak(fp32-fma) = %g, %t", peak, ok)
	}
	if _, ok := r.Peak(ProbeAMXInt8); ok {
		t.Error("Peak of a skipped probe reported")
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fp32-fma", "380", "skipped: unavailable: CPU/OS lacks amx-int8"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
	js, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(js), `"per_second":380000000000`) {
		t.Errorf("JSON: %s, %v", js, err)
	}
}

// TestFullProbe runs every probe at full size (1 GiB buffer, all default
// thread counts) and prints the report; too slow for the unit suite, so it
// runs only with DAMASCUS_ROOFLINE_FULL=1.
func TestFullProbe(t *testing.T) {
	if os.Getenv("DAMASCUS_ROOFLINE_FULL") == "" {
		t.Skip("set DAMASCUS_ROOFLINE_FULL=1 to run the full-size probes")
	}
	r := Run(Options{})
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	for _, m := range r.Measurements {
		if m.Skipped == "" && (!(m.Best > 0) || !finite(m.Best)) {
			t.Errorf("%+v", m)
		}
	}
}
