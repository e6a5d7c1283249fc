package quant

import (
	"math"
	"testing"
)

// exactHalves are halves with their exact float32 values: each converts to
// the other in either direction.
var exactHalves = []struct {
	h uint16
	f float32
}{
	{0x0000, 0},
	{0x3c00, 1},
	{0xc000, -2},
	{0x3555, 0.333251953125},
	{0x7bff, 65504},
	{0x0400, 0x1p-14},               // smallest normal
	{0x0001, 0x1p-24},               // smallest subnormal
	{0x03ff, 1023 * 0x1p-24},        // largest subnormal
	{0x8001, -0x1p-24},              // negative subnormal
	{0x7c00, float32(math.Inf(1))},  // +inf
	{0xfc00, float32(math.Inf(-1))}, // −inf
	{0x3bff, 1 - 0x1p-11},           // just below 1
	{0x4248, 3.140625},              // π rounded
	{0xfbff, -65504},                // most negative
	{0x0200, 0x1p-15},               // subnormal power of two
	{0x5640, 100},                   // integer
	{0x2e66, 0.0999755859375},       // 0.1 rounded
	{0xb800, -0.5},                  // negative power of two
	{0x7800, 32768},                 // 2^15
	{0x0401, 0x1p-14 + 0x1p-24},     // normal with lsb
	{0x8000, float32(math.Copysign(0, -1))},
}

func TestFP16ToFloat32(t *testing.T) {
	for _, c := range exactHalves {
		got := FP16ToFloat32(c.h)
		if math.Float32bits(got) != math.Float32bits(c.f) {
			t.Errorf("FP16ToFloat32(%#04x) = %g (%#08x), want %g", c.h, got, math.Float32bits(got), c.f)
		}
	}
	// NaN keeps its payload and is quiet.
	if got := math.Float32bits(FP16ToFloat32(0x7c01)); got != 0x7fc02000 {
		t.Errorf("FP16ToFloat32(0x7c01) bits = %#08x, want 0x7fc02000", got)
	}
	if got := math.Float32bits(FP16ToFloat32(0xfe00)); got != 0xffc00000 {
		t.Errorf("FP16ToFloat32(0xfe00) bits = %#08x, want 0xffc00000", got)
	}
}

func TestFloat32ToFP16(t *testing.T) {
	for _, c := range exactHalves {
		if got := Float32ToFP16(c.f); got != c.h {
			t.Errorf("Float32ToFP16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	// Values a half cannot hold: rounded to nearest even, or saturated.
	cases := []struct {
		f    float32
		want uint16
	}{
		{65519, 0x7bff},         // rounds down to the largest half
		{65520, 0x7c00},         // the tie goes up, to infinity
		{1e10, 0x7c00},          // overflow saturates to infinity
		{-1e10, 0xfc00},         //
		{1 + 0x1p-11, 0x3c00},   // tie between 1 and 1+2⁻¹⁰: even (1)
		{1 + 3*0x1p-11, 0x3c02}, // tie: even (1+2·2⁻¹⁰)
		{1 + 0x1p-11 + 0x1p-20, 0x3c01},
		{0x1p-25, 0x0000},       // tie with zero: even (0)
		{1.5 * 0x1p-25, 0x0001}, // above the tie
		{3 * 0x1p-25, 0x0002},   // tie between 1 and 2 ulps: even (2)
		{1e-40, 0x0000},         // float32 subnormal underflows
		{0.1, 0x2e66},
	}
	for _, c := range cases {
		if got := Float32ToFP16(c.f); got != c.want {
			t.Errorf("Float32ToFP16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if got := Float32ToFP16(float32(math.NaN())); got&0x7fff != 0x7e00 {
		t.Errorf("Float32ToFP16(NaN) = %#04x, want quiet NaN 0x7e00", got)
	}
	if got := Float32ToFP16(math.Float32frombits(0xff800001)); got != 0xfe00 {
		t.Errorf("Float32ToFP16(-sNaN) = %#04x, want 0xfe00", got)
	}
}

// Every half converts to float32 and back to itself (NaNs to the canonical NaN).
func TestFP16RoundTripAll(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := FP16ToFloat32(uint16(h))
		back := Float32ToFP16(f)
		if math.IsNaN(float64(f)) {
			if back != uint16(h)&0x8000|0x7e00 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("%#04x → %g → %#04x", h, f, back)
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		bits uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie: even (down)
		{0x3f818000, 0x3f82}, // tie: even (up)
		{0x3f808001, 0x3f81}, // above the tie
		{0x7f7fffff, 0x7f80}, // max float rounds to infinity
		{0x7f800000, 0x7f80}, // +inf
		{0x7f800001, 0x7fc0}, // signalling NaN: truncated, made quiet
		{0xffc12345, 0xffc1}, // quiet NaN keeps its top payload
		{0x00000001, 0x0000}, // subnormal rounds to zero
		{0x00018000, 0x0002}, // subnormal tie: even (up)
		{0x80000000, 0x8000}, // −0
	}
	for _, c := range cases {
		if got := Float32ToBF16(math.Float32frombits(c.bits)); got != c.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
	if got := BF16ToFloat32(0xc040); got != -3 {
		t.Errorf("BF16ToFloat32(0xc040) = %g, want -3", got)
	}
	if got := math.Float32bits(BF16ToFloat32(0x1234)); got != 0x12340000 {
		t.Errorf("BF16ToFloat32(0x1234) bits = %#08x, want 0x12340000", got)
	}
}
