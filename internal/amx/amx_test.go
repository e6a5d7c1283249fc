package amx

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

func skipWithoutAMX(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("AMX unusable here: %v", err)
	}
}

func TestConfigLayout(t *testing.T) {
	c := NewConfig()
	c.SetTile(3, 12, 40)
	if c[0] != 1 || c[16+6] != 40 || c[16+7] != 0 || c[48+3] != 12 {
		t.Fatalf("config bytes wrong: % x", c[:])
	}
}

func TestMatmulInt8AgainstScalar(t *testing.T) {
	skipWithoutAMX(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var a [M * KInt8]int8
	var b, bp [KInt8 * N]int8
	var c, want [M * N]int32
	for i := range a {
		a[i] = int8(rng.IntN(256) - 128)
	}
	for i := range b {
		b[i] = int8(rng.IntN(256) - 128)
	}
	// Extremes make sign handling visible.
	a[0], b[0], a[1], b[N] = -128, -128, 127, -128
	for i := range c {
		c[i] = int32(rng.IntN(2001) - 1000)
		want[i] = c[i]
	}
	for m := 0; m < M; m++ {
		for n := 0; n < N; n++ {
			for k := 0; k < KInt8; k++ {
				want[m*N+n] += int32(a[m*KInt8+k]) * int32(b[k*N+n])
			}
		}
	}
	PackInt8(&bp, &b)
	if err := MatmulInt8(&c, &a, &bp); err != nil {
		t.Fatal(err)
	}
	if c != want {
		for i := range c {
			if c[i] != want[i] {
				t.Fatalf("C[%d][%d] = %d, want %d", i/N, i%N, c[i], want[i])
			}
		}
	}
}

func bf16(f float32) uint16 { return uint16(math.Float32bits(f) >> 16) } // exact for the values used

func TestMatmulBF16AgainstScalar(t *testing.T) {
	skipWithoutAMX(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var a [M * KBF16]uint16
	var b, bp [KBF16 * N]uint16
	var c [M * N]float32
	var want [M * N]float64
	// Small integers and halves are exact in bf16, and every partial sum is
	// exact in float32, so the product must match the float64 one exactly.
	for i := range a {
		a[i] = bf16(float32(rng.IntN(17)-8) / 2)
	}
	for i := range b {
		b[i] = bf16(float32(rng.IntN(17) - 8))
	}
	for i := range c {
		c[i] = float32(rng.IntN(9) - 4)
		want[i] = float64(c[i])
	}
	for m := 0; m < M; m++ {
		for n := 0; n < N; n++ {
			for k := 0; k < KBF16; k++ {
				av := math.Float32frombits(uint32(a[m*KBF16+k]) << 16)
				bv := math.Float32frombits(uint32(b[k*N+n]) << 16)
				want[m*N+n] += float64(av) * float64(bv)
			}
		}
	}
	PackBF16(&bp, &b)
	if err := MatmulBF16(&c, &a, &bp); err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if float64(c[i]) != want[i] {
			t.Fatalf("C[%d][%d] = %g, want %g", i/N, i%N, c[i], want[i])
		}
	}
}

func TestUnavailableIsAnError(t *testing.T) {
	if Available() == nil {
		t.Skip("AMX is usable here")
	}
	var a [M * KInt8]int8
	var b [KInt8 * N]int8
	var c [M * N]int32
	err := MatmulInt8(&c, &a, &b)
	if err == nil {
		t.Fatal("MatmulInt8 succeeded without AMX")
	}
	if cpufeat.CPUX86().AMXTile == false && !errors.Is(err, cpufeat.ErrAMXNotInCPU) {
		t.Fatalf("error does not name the missing CPU feature: %v", err)
	}
}
