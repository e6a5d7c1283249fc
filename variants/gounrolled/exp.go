package gounrolled

import "math"

// expf is Cephes' single-precision exp: n = round(x·log2 e), r = x - n·ln2
// in two parts, a degree-5 polynomial, times 2^n built in the exponent bits.
// Relative error about 2 float32 ulps; +Inf above 88.7, 0 below -103.9.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	switch {
	case x > 88.8:
		return float32(math.Inf(1))
	case x < -104:
		return 0
	case x != x:
		return x
	}
	// Round x·log2 e to an integer by the 1.5·2^23 trick (nearest even).
	fn := float32(float32(x*log2e)+12582912) - 12582912
	r := x - fn*c1
	r -= fn * c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	n := int32(fn)
	if n < -126 || n > 127 {
		return float32(math.Ldexp(float64(p), int(n)))
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}
