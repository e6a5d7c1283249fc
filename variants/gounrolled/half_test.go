package gounrolled_test

import (
	"math"
	"testing"

	"github.com/damascus-llm/damascus/variants/gounrolled"
)

// TestFP16ToFloat32Exhaustive checks every half value against its definition.
func TestFP16ToFloat32Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		exp, man := int(h>>10&0x1f), float64(h&0x3ff)
		var want float64
		switch exp {
		case 0:
			want = sign * man * math.Pow(2, -24)
		case 0x1f:
			want = sign * math.Inf(1)
			if man != 0 {
				want = math.NaN()
			}
		default:
			want = sign * (1 + man/1024) * math.Pow(2, float64(exp-15))
		}
		got := gounrolled.FP16ToFloat32(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) || math.Float32bits(got)>>13&0x3ff != uint32(h&0x3ff) {
				t.Fatalf("FP16ToFloat32(%#04x) = %v (%#x), want a NaN with its payload", h, got, math.Float32bits(got))
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign < 0) {
			t.Fatalf("FP16ToFloat32(%#04x) = %v, want %v", h, got, want)
		}
	}
}
