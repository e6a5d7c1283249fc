package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
)

// A host model of mma_pipe.cu (no GPU needed): the same shared-memory
// layout filled as the kernels' cp.async loops fill it, the same fragment
// addresses, and ldmatrix and mma.sync as the PTX ISA defines their
// fragments (lane L = 4g + q: A rows g and g+8, columns 4q…; B column g;
// C row g/g+8, columns 2q, 2q+1). It checks the kernels' index
// arithmetic against the float64 product of the dequantized operands, one
// block at a time, at shapes that cut tiles short. It is a transcription:
// when mma_pipe.cu's indexing changes, change it here too.

const emuThreads, emuBN = 256, 64

// emuLdsm is ldmatrix .x1/.x2/.x4 (m8n8, b16, not transposed): matrix i's
// row j from the address of lane 8i + j; lane L gets word L%4 of row L/4.
func emuLdsm(t *testing.T, sm []byte, addr *[32]int, nmat int) (r [32][4]uint32) {
	for i := range nmat {
		for j := range 8 {
			if a := addr[8*i+j]; a%16 != 0 || a < 0 || a+16 > len(sm) {
				t.Fatalf("ldmatrix row address %d (matrix %d row %d) unaligned or outside shared memory", a, i, j)
			}
		}
	}
	for L := range 32 {
		for i := range nmat {
			r[L][i] = binary.LittleEndian.Uint32(sm[addr[8*i+L/4]+4*(L%4):])
		}
	}
	return r
}

func sbyte(w uint32, j int) int32 { return int32(int8(w >> (8 * j))) }

// emuMMA is mma.sync m16n8k32 (kk 32: a[L][0..3], b[L][0..1]) or m16n8k16
// (kk 16: a[L][0..1], b[L][0]), s8 × s8 + s32.
func emuMMA(kk int, a *[32][4]uint32, b *[32][2]uint32, c *[32][4]int32) {
	var A [16][32]int32
	var B [32][8]int32
	for L := range 32 {
		g, q := L/4, L%4
		for j := range 4 {
			A[g][4*q+j] = sbyte(a[L][0], j)
			A[g+8][4*q+j] = sbyte(a[L][1], j)
			B[4*q+j][g] = sbyte(b[L][0], j)
			if kk == 32 {
				A[g][16+4*q+j] = sbyte(a[L][2], j)
				A[g+8][16+4*q+j] = sbyte(a[L][3], j)
				B[16+4*q+j][g] = sbyte(b[L][1], j)
			}
		}
	}
	for L := range 32 {
		g, q := L/4, L%4
		for i, rc := range [4][2]int{{g, 2 * q}, {g, 2*q + 1}, {g + 8, 2 * q}, {g + 8, 2*q + 1}} {
			var d int32
			for k := range kk {
				d += A[rc[0]][k] * B[k][rc[1]]
			}
			c[L][i] += d
		}
	}
}

func h2f(h uint32) float32 { return quant.FP16ToFloat32(uint16(h)) }

// emuPipe runs block (bx, by) of the Q4_K or Q6_K kernel (w in the device
// layout) into dst.
func emuPipe(t *testing.T, wt quant.Type, dst []float32, ldd int, w []byte, rows int, x []byte, n, k, bx, by int) {
	nb := k / 256
	rowB := pipeRow[wt]
	as := pipeBM * rowB
	sm := make([]byte, as+emuBN*pipeXS)
	row0, tok0 := bx*pipeBM, by*emuBN
	q6row := q6kDevRow(k)
	nw := 73
	if wt == quant.Q6_K {
		nw = 65
	}
	var acc, accm [8][32][2][4][4]float32
	for b := range nb {
		clear(sm)
		// The loads: TPR = 2 threads a weight row, 4 a token.
		for tid := range emuThreads {
			lr, lq := tid/2, tid%2
			if row := row0 + lr; row < rows {
				for c := lq; c < rowB/16; c += 2 {
					var src int
					switch {
					case wt == quant.Q4_K && c < 9:
						src = (row*nb+b)*144 + 16*c
					case wt == quant.Q4_K:
						continue
					case c < 12:
						src = row*q6row + 192*b + 16*c
					case c == 12:
						src = row*q6row + 192*nb + 16*b
					case c == 13:
						src = row*q6row + 208*nb + (2*b)&^15
					default:
						continue
					}
					copy(sm[lr*rowB+16*c:lr*rowB+16*c+16], w[src:src+16])
				}
			}
			tt, q := tid>>2, tid&3
			if tok := tok0 + tt; tok < n {
				for j := 0; q+4*j < nw; j++ {
					src := (tok*nb+b)*292 + 4*(q+4*j)
					d := as + tt*pipeXS + 12 + 4*(q+4*j)
					copy(sm[d:d+4], x[src:src+4])
				}
			}
		}
		u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(sm[off:]) }
		for warp := range 8 {
			wr, wtk := 32*(warp&3), 32*(warp>>2)
			var isum [32][2][4][4]int32
			var addr [32]int
			if wt == quant.Q4_K {
				var scl, sch [32][2][2]uint32
				for L := range 32 {
					g := L / 4
					for mt := range 2 {
						for h := range 2 {
							ar := (wr + 16*mt + g + 8*h) * 144
							w0, w2 := u32(ar+4), u32(ar+12)
							scl[L][mt][h] = w0 & 0x3f3f3f3f
							sch[L][mt][h] = (w2 & 0x0f0f0f0f) | ((w0 >> 2) & 0x30303030)
						}
					}
				}
				for s := range 8 {
					var a [2][32][4]uint32
					var sc [32][2][2]int32
					for mt := range 2 {
						for L := range 32 {
							addr[L] = (wr+16*mt+(L&15))*144 + 16*(1+2*(s>>1)+(L>>4))
						}
						raw := emuLdsm(t, sm, &addr, 4)
						for L := range 32 {
							for i := range 4 {
								a[mt][L][i] = (raw[L][i] >> (4 * (s & 1))) & 0x0f0f0f0f
							}
							for h := range 2 {
								wv := scl[L][mt][h]
								if s >= 4 {
									wv = sch[L][mt][h]
								}
								sc[L][mt][h] = int32((wv >> (8 * (s & 3))) & 0xff)
							}
						}
					}
					for nt := range 4 {
						for L := range 32 {
							addr[L] = as + (wtk+8*nt+(L&7))*pipeXS + 16 + 16*(2*s+((L>>3)&1))
						}
						bb4 := emuLdsm(t, sm, &addr, 2)
						var bb [32][2]uint32
						for L := range 32 {
							bb[L] = [2]uint32{bb4[L][0], bb4[L][1]}
						}
						for mt := range 2 {
							var c [32][4]int32
							emuMMA(32, &a[mt], &bb, &c)
							for L := range 32 {
								for i := range 4 {
									isum[L][mt][nt][i] += sc[L][mt][i/2] * c[L][i]
								}
							}
						}
					}
				}
				// The epilogue: the mins as A fragments, bsums as 64·hi + lo.
				var am [2][32][4]uint32
				var d, dm [32][2][2]float32
				for L := range 32 {
					g, q4 := L/4, L%4
					for mt := range 2 {
						for h := range 2 {
							ar := (wr + 16*mt + g + 8*h) * 144
							dd, w1, w2 := u32(ar), u32(ar+8), u32(ar+12)
							d[L][mt][h], dm[L][mt][h] = h2f(dd&0xffff), h2f(dd>>16)
							mw := w1 & 0x3f3f3f3f
							if q4 >= 2 {
								mw = ((w2 >> 4) & 0x0f0f0f0f) | ((w1 >> 2) & 0x30303030)
							}
							b0 := 2 * (q4 & 1)
							m0, m1 := (mw>>(8*b0))&0xff, (mw>>(8*(b0+1)))&0xff
							am[mt][L][h] = m0 | m0<<8 | m1<<16 | m1<<24
						}
					}
				}
				for nt := range 4 {
					var bhi, blo [32][2]uint32
					for L := range 32 {
						g, q4 := L/4, L%4
						off := as + (wtk+8*nt+g)*pipeXS + 272 + 8*q4
						vx, vy := u32(off), u32(off+4)
						perm := func(a, b uint32) uint32 { return a&0xff | (a>>16&0xff)<<8 | (b&0xff)<<16 | (b>>16&0xff)<<24 }
						bhi[L][0] = perm(vx>>6, vy>>6)
						blo[L][0] = perm(vx&0x003f003f, vy&0x003f003f)
					}
					for mt := range 2 {
						var mi [32][4]int32
						emuMMA(16, &am[mt], &bhi, &mi)
						for L := range 32 {
							for i := range 4 {
								mi[L][i] *= 64
							}
						}
						emuMMA(16, &am[mt], &blo, &mi)
						for L := range 32 {
							q4 := L % 4
							for i := range 4 {
								t0 := wtk + 8*nt + 2*q4 + i%2
								xv := math.Float32frombits(u32(as + t0*pipeXS + 12))
								acc[warp][L][mt][nt][i] += d[L][mt][i/2] * xv * float32(isum[L][mt][nt][i])
								accm[warp][L][mt][nt][i] += dm[L][mt][i/2] * xv * float32(mi[L][i])
							}
						}
					}
				}
				continue
			}
			// Q6_K
			for hn := range 2 {
				for jj := range 2 {
					var a [2][4][32][4]uint32 // [mt][c][lane][row g, g+8]
					var sc [32][2][4][2]int32
					for mt := range 2 {
						for L := range 32 {
							addr[L] = (wr+16*mt+(L&15))*240 + 128 + 32*hn + 16*jj
						}
						qh := emuLdsm(t, sm, &addr, 2)
						for L := range 32 {
							addr[L] = (wr+16*mt+(L&15))*240 + 64*hn + 16*jj + 32*(L>>4)
						}
						ql := emuLdsm(t, sm, &addr, 4)
						for L := range 32 {
							g := L / 4
							for c := range 4 {
								for h := range 2 {
									v := ((ql[L][2*(c&1)+h] >> (4 * (c >> 1))) & 0x0f0f0f0f) | (((qh[L][h] >> (2 * c)) & 0x03030303) << 4)
									a[mt][c][L][h] = ((v | 0x80808080) - 0x20202020) ^ 0x80808080
								}
							}
							for h := range 2 {
								off := (wr+16*mt+g+8*h)*240 + 192 + 8*hn
								sx, sy := u32(off), u32(off+4)
								for c := range 4 {
									wv := sx
									if c >= 2 {
										wv = sy
									}
									sc[L][mt][c][h] = int32(int8(wv >> (8 * (2*(c&1) + jj))))
								}
							}
						}
					}
					for nt := range 4 {
						for L := range 32 {
							addr[L] = as + (wtk+8*nt+(L&7))*pipeXS + 16 + 16*(8*hn+jj+2*(L>>3))
						}
						bb := emuLdsm(t, sm, &addr, 4)
						for mt := range 2 {
							for c := range 4 {
								var bc [32][2]uint32
								for L := range 32 {
									bc[L][0] = bb[L][c]
								}
								var cc [32][4]int32
								emuMMA(16, &a[mt][c], &bc, &cc)
								for L := range 32 {
									for i := range 4 {
										isum[L][mt][nt][i] += sc[L][mt][c][i/2] * cc[L][i]
									}
								}
							}
						}
					}
				}
			}
			for L := range 32 {
				g, q4 := L/4, L%4
				for mt := range 2 {
					for nt := range 4 {
						for i := range 4 {
							r := wr + 16*mt + g + 8*(i/2)
							dv := h2f(uint32(binary.LittleEndian.Uint16(sm[r*240+208+(2*b)&15:])))
							t0 := wtk + 8*nt + 2*q4 + i%2
							xv := math.Float32frombits(u32(as + t0*pipeXS + 12))
							acc[warp][L][mt][nt][i] += dv * xv * float32(isum[L][mt][nt][i])
						}
					}
				}
			}
		}
	}
	for warp := range 8 {
		wr, wtk := 32*(warp&3), 32*(warp>>2)
		for L := range 32 {
			g, q4 := L/4, L%4
			for mt := range 2 {
				for nt := range 4 {
					for i := range 4 {
						r, tk := row0+wr+16*mt+g+8*(i/2), tok0+wtk+8*nt+2*q4+i%2
						if r < rows && tk < n {
							dst[tk*ldd+r] = acc[warp][L][mt][nt][i] - accm[warp][L][mt][nt][i]
						}
					}
				}
			}
		}
	}
}

func TestMMAPipeEmulated(t *testing.T) {
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		op, _ := ledger.LookupOp(ledger.MatMulOp(wt))
		for _, s := range []ledger.Shape{{Rows: 130, K: 768, N: 70}, {Rows: 17, K: 256, N: 5}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", wt, s.Rows, s.K, s.N), func(t *testing.T) {
				w, err := workload.New(op, s, 11)
				if err != nil {
					t.Fatal(err)
				}
				dw := formats[wt].deviceWeights(w.W, s.Rows, s.K)
				got := make([]float32, w.OutLen())
				for i := range got {
					got[i] = float32(math.NaN())
				}
				for bx := range (s.Rows + pipeBM - 1) / pipeBM {
					for by := range (s.N + emuBN - 1) / emuBN {
						emuPipe(t, wt, got, w.LDD, dw, s.Rows, w.XQ, s.N, s.K, bx, by)
					}
				}
				wf := make([]float32, s.Rows*s.K)
				xf := make([]float32, s.N*s.K)
				if err := quant.Dequantize(wt, w.W, wf); err != nil {
					t.Fatal(err)
				}
				if err := quant.Dequantize(quant.Q8_K, w.XQ, xf); err != nil {
					t.Fatal(err)
				}
				bad := 0
				for j := range s.N {
					for r := range s.Rows {
						var ref, mag float64
						for i := range s.K {
							p := float64(wf[r*s.K+i]) * float64(xf[j*s.K+i])
							ref += p
							mag += math.Abs(p)
						}
						g := float64(got[j*w.LDD+r])
						if math.IsNaN(g) || math.Abs(g-ref) > 1e-5*mag+1e-30 {
							if bad++; bad <= 5 {
								t.Errorf("row %d token %d: %g, want %g (Σ|w·x| %g)", r, j, g, ref, mag)
							}
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d outputs wrong", bad, s.Rows*s.N)
				}
			})
		}
	}
}
