package llama

import (
	"fmt"
	"testing"
)

// BenchmarkForward times the production path on stories260K: single-token
// decode (MatVec) and a 64-token prefill (MatMul), reporting tokens/s.
func BenchmarkForward(b *testing.B) {
	m, _ := openStories(b)
	for _, threads := range []int{1, 2} {
		for _, n := range []int{1, 64} {
			op := "decode"
			if n > 1 {
				op = fmt.Sprintf("prefill%d", n)
			}
			b.Run(fmt.Sprintf("variant=production/shape=stories260K/op=%s/threads=%d", op, threads), func(b *testing.B) {
				c, err := m.NewContext(Options{NCtx: 512, Threads: threads})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				tokens := make([]int32, n)
				for i := range tokens {
					tokens[i] = int32(1 + i%400)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if c.Pos()+n > c.NCtx() {
						c.Truncate(0)
					}
					if _, err := c.Eval(tokens, false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
