package quant

import (
	"fmt"
	"testing"
)

// Scalar reference speeds, for comparison with the optimized kernels:
// go test -run='^$' -bench=. ./quant
func BenchmarkDequantize(b *testing.B) {
	const n = 4096
	for _, typ := range []Type{F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K} {
		src := make([]byte, n/typ.BlockSize()*typ.TypeSize())
		if err := Quantize(typ, gaussian(n, 1, 1), src); err != nil {
			b.Fatal(err)
		}
		dst := make([]float32, n)
		b.Run(fmt.Sprintf("variant=scalar/type=%s/shape=%d", typ, n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if err := Dequantize(typ, src, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/value")
		})
	}
}

func BenchmarkQuantize(b *testing.B) {
	const n = 4096
	x := gaussian(n, 1, 1)
	for _, typ := range []Type{F16, Q8_0, Q4_0, Q4_K, Q6_K, Q8_K} {
		dst := make([]byte, n/typ.BlockSize()*typ.TypeSize())
		b.Run(fmt.Sprintf("variant=ref/type=%s/shape=%d", typ, n), func(b *testing.B) {
			for b.Loop() {
				if err := Quantize(typ, x, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/value")
		})
	}
}
