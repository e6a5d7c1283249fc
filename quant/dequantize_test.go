package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The expected values in these tests are computed element by element from
// the block layouts (ggml-common.h), in float64, independently of the
// dequantizers' loop structure. Scales are powers of two and quants small
// integers, so every expected value is exact in float32 too.

const (
	h1     = 0x3c00 // 1.0 as a half
	hEight = 0x3000 // 0.125
	hSix   = 0x2c00 // 0.0625
	hNeg1  = 0xbc00 // −1.0
)

func putU16(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) }

// randomBlocks returns n blocks of random bytes of type t, with each block's
// half scales at the given offsets replaced by the given halves.
func randomBlocks(t Type, n int, seed uint64, halves map[int]uint16) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	bs := t.TypeSize()
	b := make([]byte, n*bs)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for k := 0; k < n; k++ {
		for off, h := range halves {
			putU16(b[k*bs+off:], h)
		}
	}
	return b
}

type elementFunc func(block []byte, e int) float64

// checkElements dequantizes blocks and compares every value with want.
func checkElements(t *testing.T, typ Type, blocks []byte, want elementFunc) {
	t.Helper()
	n := len(blocks) / typ.TypeSize() * typ.BlockSize()
	got := make([]float32, n)
	if err := Dequantize(typ, blocks, got); err != nil {
		t.Fatal(err)
	}
	bs, qk := typ.TypeSize(), typ.BlockSize()
	for i := range got {
		w := want(blocks[i/qk*bs:(i/qk+1)*bs], i%qk)
		if float64(got[i]) != w || float32(w) != got[i] {
			t.Fatalf("%s value %d = %g, want %g", typ, i, got[i], w)
		}
	}
}

func h(b []byte) float64 { return float64(FP16ToFloat32(binary.LittleEndian.Uint16(b))) }

func TestDequantizeLiteralBlocks(t *testing.T) {
	// Q4_0: d = 0.5, byte j holds nibbles (j, 15−j).
	q40 := make([]byte, 18)
	putU16(q40, 0x3800)
	for j := 0; j < 16; j++ {
		q40[2+j] = byte(j) | byte(15-j)<<4
	}
	got := make([]float32, 32)
	if err := Dequantize(Q4_0, q40, got); err != nil {
		t.Fatal(err)
	}
	for j, want := range map[int]float32{0: -4, 1: -3.5, 8: 0, 15: 3.5, 16: 3.5, 31: -4} {
		if got[j] != want {
			t.Errorf("Q4_0 value %d = %g, want %g", j, got[j], want)
		}
	}

	// Q8_0: d = 2, quants −16..15.
	q80 := make([]byte, 34)
	putU16(q80, 0x4000)
	for j := 0; j < 32; j++ {
		q80[2+j] = byte(int8(j - 16))
	}
	if err := Dequantize(Q8_0, q80, got); err != nil {
		t.Fatal(err)
	}
	if got[0] != -32 || got[16] != 0 || got[31] != 30 {
		t.Errorf("Q8_0 = %v, want −32 … 0 … 30", got)
	}

	// Q4_K: d = 1, dmin = 0.5; sub-block 0 scale 3 min 2, sub-block 5 scale
	// 17 (high bits in byte 1) min 33 (high bits in byte 5); all quants 0x21.
	q4k := make([]byte, 144)
	putU16(q4k, h1)
	putU16(q4k[2:], 0x3800)
	q4k[4+0] = 3        // scale 0
	q4k[4+4] = 2        // min 0
	q4k[4+9] = 1 | 1<<4 // low nibbles of scale 5 (1) and min 5 (1)
	q4k[4+1] |= 1 << 6  // scale 5 high bits: 01 → 16
	q4k[4+5] |= 2 << 6  // min 5 high bits: 10 → 32
	for j := 16; j < 144; j++ {
		q4k[j] = 0x21 // low nibble 1, high nibble 2
	}
	got = make([]float32, 256)
	if err := Dequantize(Q4_K, q4k, got); err != nil {
		t.Fatal(err)
	}
	// value 0: sub-block 0, low nibble: 3·1 − 0.5·2 = 2.
	// value 160: chunk 2 (values 128..191), high half → sub-block 5, nibble 2:
	// 17·2 − 0.5·33 = 17.5.
	if got[0] != 2 || got[160] != 17.5 {
		t.Errorf("Q4_K values 0, 160 = %g, %g; want 2, 17.5", got[0], got[160])
	}

	// Q6_K: d = 0.5, scale 0 = −3, quant 0 = 0b01_0101 = 21 → 21−32 = −11 → 16.5.
	q6k := make([]byte, 210)
	putU16(q6k[208:], 0x3800)
	q6k[192] = 0xfd // int8 −3
	q6k[0] = 0x05   // low nibble of value 0
	q6k[128] = 0x01 // high bits of value 0
	if err := Dequantize(Q6_K, q6k, got); err != nil {
		t.Fatal(err)
	}
	if got[0] != 16.5 {
		t.Errorf("Q6_K value 0 = %g, want 16.5", got[0])
	}

	// Q8_K: d = −0.25 (float32), quant 0 = −128, quant 255 = 127.
	q8k := make([]byte, 292)
	binary.LittleEndian.PutUint32(q8k, math.Float32bits(-0.25))
	q8k[4] = 0x80
	q8k[4+255] = 0x7f
	if err := Dequantize(Q8_K, q8k, got); err != nil {
		t.Fatal(err)
	}
	if got[0] != 32 || got[255] != -31.75 || got[1] != 0 {
		t.Errorf("Q8_K values 0, 1, 255 = %g, %g, %g; want 32, 0, -31.75", got[0], got[1], got[255])
	}
}

func TestDequantizeLayouts(t *testing.T) {
	tests := []struct {
		typ    Type
		halves map[int]uint16
		want   elementFunc
	}{
		{Q4_0, map[int]uint16{0: hEight}, func(b []byte, e int) float64 {
			q := b[2+e%16]
			if e >= 16 {
				q >>= 4
			}
			return float64(int(q&15)-8) * h(b)
		}},
		{Q4_1, map[int]uint16{0: hEight, 2: hNeg1}, func(b []byte, e int) float64 {
			q := b[4+e%16]
			if e >= 16 {
				q >>= 4
			}
			return float64(q&15)*h(b) + h(b[2:])
		}},
		{Q5_0, map[int]uint16{0: hSix}, func(b []byte, e int) float64 {
			qh := binary.LittleEndian.Uint32(b[2:])
			q := b[6+e%16]
			if e >= 16 {
				q >>= 4
			}
			v := int(q&15) | int(qh>>e&1)<<4
			return float64(v-16) * h(b)
		}},
		{Q5_1, map[int]uint16{0: hSix, 2: 0x4100}, func(b []byte, e int) float64 {
			qh := binary.LittleEndian.Uint32(b[4:])
			q := b[8+e%16]
			if e >= 16 {
				q >>= 4
			}
			v := int(q&15) | int(qh>>e&1)<<4
			return float64(v)*h(b) + h(b[2:])
		}},
		{Q8_0, map[int]uint16{0: hEight}, func(b []byte, e int) float64 {
			return float64(int8(b[2+e])) * h(b)
		}},
		{Q8_1, map[int]uint16{0: hEight}, func(b []byte, e int) float64 {
			return float64(int8(b[4+e])) * h(b)
		}},
		{Q2_K, map[int]uint16{80: hEight, 82: hSix}, func(b []byte, e int) float64 {
			n, r := e/128, e%128
			g, l := r/32, r%32
			q := b[16+32*n+l] >> (2 * g) & 3
			sc := b[e/16]
			return h(b[80:])*float64(sc&15)*float64(q) - h(b[82:])*float64(sc>>4)
		}},
		{Q3_K, map[int]uint16{108: hEight}, func(b []byte, e int) float64 {
			n, r := e/128, e%128
			g, l := r/32, r%32
			q := int(b[32+32*n+l] >> (2 * g) & 3)
			if b[l]>>(4*n+g)&1 == 0 {
				q -= 4
			}
			s := e / 16
			sc := b[96+s%8] & 15
			if s >= 8 {
				sc = b[96+s-8] >> 4
			}
			sc |= (b[96+8+s%4] >> (2 * (s / 4)) & 3) << 4
			return h(b[108:]) * float64(int(sc)-32) * float64(q)
		}},
		{Q4_K, map[int]uint16{0: hEight, 2: hSix}, func(b []byte, e int) float64 {
			c, w := e/64, e%64
			q := b[16+32*c+w%32]
			if w >= 32 {
				q >>= 4
			}
			sc, m := kScaleMin(b[4:16], e/32)
			return h(b)*float64(sc)*float64(q&15) - h(b[2:])*float64(m)
		}},
		{Q5_K, map[int]uint16{0: hEight, 2: hSix}, func(b []byte, e int) float64 {
			c, w := e/64, e%64
			q := int(b[48+32*c+w%32])
			if w >= 32 {
				q >>= 4
			}
			bit := 2 * c
			if w >= 32 {
				bit++
			}
			q = q&15 | int(b[16+w%32]>>bit&1)<<4
			sc, m := kScaleMin(b[4:16], e/32)
			return h(b)*float64(sc)*float64(q) - h(b[2:])*float64(m)
		}},
		{Q6_K, map[int]uint16{208: hEight}, func(b []byte, e int) float64 {
			n, r := e/128, e%128
			g, l := r/32, r%32
			low := b[64*n+l+32*(g%2)]
			if g >= 2 {
				low >>= 4
			}
			q := int(low&15) | int(b[128+32*n+l]>>(2*g)&3)<<4
			return h(b[208:]) * float64(int8(b[192+e/16])) * float64(q-32)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.typ.String(), func(t *testing.T) {
			checkElements(t, tc.typ, randomBlocks(tc.typ, 3, uint64(tc.typ), tc.halves), tc.want)
		})
	}
	t.Run("Q8_K", func(t *testing.T) {
		b := randomBlocks(Q8_K, 2, 8, nil)
		for k := 0; k < 2; k++ {
			binary.LittleEndian.PutUint32(b[k*292:], math.Float32bits(float32(k)-0.375))
		}
		checkElements(t, Q8_K, b, func(b []byte, e int) float64 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) * float64(int8(b[4+e]))
		})
	})
}

// kScaleMin reads the 6-bit scale and min of sub-block s from the twelve
// packed bytes: s<4 in the low six bits of bytes s and s+4; s≥4 in the
// nibbles of byte s+4 with the high two bits in the top of bytes s−4 and s.
func kScaleMin(p []byte, s int) (sc, m int) {
	if s < 4 {
		return int(p[s] & 63), int(p[s+4] & 63)
	}
	return int(p[s+4]&15) | int(p[s-4]>>6)<<4, int(p[s+4]>>4) | int(p[s]>>6)<<4
}

func TestDequantizePlain(t *testing.T) {
	want := []float32{1, -2.5, 0x1p-24, 65504}
	f32 := make([]byte, 16)
	f16 := make([]byte, 8)
	bf := make([]byte, 8)
	for i, v := range want {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(v))
	}
	copy(f16, []byte{0x00, 0x3c, 0x00, 0xc1, 0x01, 0x00, 0xff, 0x7b})
	copy(bf, []byte{0x80, 0x3f, 0x20, 0xc0, 0x80, 0x33, 0x80, 0x47})
	bfWant := []float32{1, -2.5, 0x1p-24, 65536}
	for _, c := range []struct {
		typ  Type
		src  []byte
		want []float32
	}{{F32, f32, want}, {F16, f16, want}, {BF16, bf, bfWant}} {
		got := make([]float32, 4)
		if err := Dequantize(c.typ, c.src, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s value %d = %g, want %g", c.typ, i, got[i], c.want[i])
			}
		}
	}
}

func TestDequantizeLengthErrors(t *testing.T) {
	for _, c := range []struct {
		typ     Type
		src, n  int
		message string
	}{
		{Q4_0, 18, 31, "not a multiple of the block size 32"},
		{Q4_0, 17, 32, "takes 18 bytes, got 17"},
		{Q4_K, 144, 512, "takes 288 bytes, got 144"},
		{F32, 3, 1, "takes 4 bytes, got 3"},
		{IQ2_XS, 74, 256, "not supported"},
		{Type(99), 1, 1, "not supported"},
	} {
		err := Dequantize(c.typ, make([]byte, c.src), make([]float32, c.n))
		if err == nil || !strings.Contains(err.Error(), c.message) {
			t.Errorf("Dequantize(%s, %d bytes, %d values) = %v, want error containing %q", c.typ, c.src, c.n, err, c.message)
		}
	}
	if err := Dequantize(Q6_K, nil, nil); err != nil {
		t.Errorf("empty row: %v", err)
	}
}

func TestTypeSizes(t *testing.T) {
	// Sizes from the block structs in ggml-common.h.
	want := map[Type]int{
		Q4_0: 2 + 16, Q4_1: 2 + 2 + 16, Q5_0: 2 + 4 + 16, Q5_1: 2 + 2 + 4 + 16,
		Q8_0: 2 + 32, Q8_1: 2 + 2 + 32,
		Q2_K: 16 + 64 + 2 + 2, Q3_K: 32 + 64 + 12 + 2, Q4_K: 2 + 2 + 12 + 128,
		Q5_K: 2 + 2 + 12 + 32 + 128, Q6_K: 128 + 64 + 16 + 2, Q8_K: 4 + 256 + 16*2,
	}
	for typ, size := range want {
		if typ.TypeSize() != size {
			t.Errorf("%s.TypeSize() = %d, want %d", typ, typ.TypeSize(), size)
		}
	}
}

// KnownTypes lists each id that Known accepts once, in id order.
func TestKnownTypes(t *testing.T) {
	var want []Type
	for id := range Type(64) {
		if id.Known() {
			want = append(want, id)
		}
	}
	if got := KnownTypes(); !slices.Equal(got, want) || got[0] != F32 || got[len(got)-1] != MXFP4 {
		t.Errorf("KnownTypes() = %v, want %v", got, want)
	}
}
