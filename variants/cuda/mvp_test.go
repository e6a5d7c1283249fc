package cuda

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
)

// proCase is one cuda-pro launch checked against the kernels it replaces.
type proCase struct {
	mode  ProMode
	k     int
	types []quant.Type
	rows  []int
	add   bool // ProNorm: with a residual add
}

// TestProMatchesUnfused holds every cuda-pro prologue, at both rows-a-warp
// counts, to the unfused launches it stands for (add_rmsnorm with its
// quantization, silu_mul_q, quantize_q8_k, a Q8_K row as it is) followed
// by the warp-per-row products: the same bits in every output, the
// residual x the same after the launch, and the counter back to 0. Run
// twice, so a counter left non-zero shows.
func TestProMatchesUnfused(t *testing.T) {
	needCUDA(t)
	e, err := OpenEngine()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(14, 3))
	cases := []proCase{
		{ProNorm, 3072, []quant.Type{quant.Q4_K, quant.Q4_K, quant.Q6_K}, []int{3072, 1024, 1024}, true},
		{ProNorm, 3072, []quant.Type{quant.Q4_K, quant.Q4_K}, []int{8192, 8192}, true},
		{ProNorm, 2048, []quant.Type{quant.Q6_K}, []int{5003}, true}, // a head: rows not a multiple of a block's
		{ProNorm, 256, []quant.Type{quant.Q4_K}, []int{7}, false},
		{ProSiLU, 8192, []quant.Type{quant.Q6_K}, []int{3072}, false},
		{ProSiLU, 8192, []quant.Type{quant.Q4_K}, []int{2048}, false},
		{ProQuant, 3072, []quant.Type{quant.Q4_K}, []int{3072}, false},
		{ProStage, 3072, []quant.Type{quant.Q6_K, quant.Q4_K}, []int{1000, 33}, false},
	}
	for _, c := range cases {
		for _, rows := range []int{1, 2} {
			name := fmt.Sprintf("mode%d/k%d/%v/rows%d", c.mode, c.k, c.rows, rows)
			t.Run(name, func(t *testing.T) { checkPro(t, e, rng, c, rows) })
		}
	}
}

func checkPro(t *testing.T, e *Engine, rng *rand.Rand, c proCase, rows int) {
	k := c.k
	floats := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	x0, add, nw, g0, u := floats(k, 1), floats(k, 0.5), floats(k, 1), floats(k, 2), floats(k, 1)
	xq := randomRows(t, rng, quant.Q8_K, 1, k)
	hostW := make([][]byte, len(c.types))
	for i, wt := range c.types {
		hostW[i] = randomRows(t, rng, wt, c.rows[i], k)
	}
	const eps = 1e-5
	got, got1, want := make([][]float32, len(c.types)), make([][]float32, len(c.types)), make([][]float32, len(c.types))
	xAfter, xRefAfter := make([]float32, k), make([]float32, k)
	var ctrAfter [1]uint32
	err := e.Do(func(l *Launcher) error {
		th, s, r := l.T, l.S, l.r
		up := func(name string, v []float32) cu.Ptr {
			p, err := upload(r, th, s, name, v)
			if err != nil {
				panic(err)
			}
			return p
		}
		buf := func(name string, n int) cu.Ptr {
			p, err := r.buf(th, name, n)
			if err != nil {
				panic(err)
			}
			return p
		}
		px, px0, pxRef, padd, pnw := up("x", x0), up("x0", x0), up("xref", x0), up("add", add), up("nw", nw)
		pg, pu := up("g", g0), up("u", u)
		pq, err := upload(r, th, s, "xq", xq)
		if err != nil {
			return err
		}
		pxn, pxqRef, ctr := buf("xn", 4*k), buf("xqref", len(xq)+16), buf("ctr", 4)
		if err := th.MemsetD32Async(ctr, 0, 1, s); err != nil {
			return err
		}
		ws := make([]Weights, len(c.types))
		outs := make([]cu.Ptr, len(c.types))
		for i, wt := range c.types {
			if ws[i], err = l.UploadWeights(hostW[i], wt, c.rows[i], k); err != nil {
				return err
			}
			outs[i] = buf(fmt.Sprintf("out%d", i), 4*c.rows[i])
		}
		p := Prologue{Mode: c.mode}
		switch c.mode {
		case ProNorm:
			p.X, p.Norm, p.Eps = px, pnw, eps
			if c.add {
				p.Add, p.Counter = padd, ctr
			}
		case ProSiLU:
			p.XF, p.U = pg, pu
		case ProQuant:
			p.XF = pg
		case ProStage:
			p.XQ = pq
		}
		// cuda-pro twice (x restored between), outputs poisoned before each.
		for run, dst := range [][][]float32{got1, got} {
			if run == 1 {
				if err := th.DtoDAsync(px, px0, 4*k, s); err != nil {
					return err
				}
			}
			for i, w := range ws {
				if err := th.MemsetD32Async(outs[i], poison, w.Rows, s); err != nil {
					return err
				}
			}
			if err := l.MatVecPro(rows, p, k, outs, ws); err != nil {
				return err
			}
			for i, w := range ws {
				dst[i] = make([]float32, w.Rows)
				if err := cu.DtoHAsync(th, dst[i], outs[i], s); err != nil {
					return err
				}
			}
			if err := th.Sync(s); err != nil {
				return err
			}
		}
		if err := cu.DtoHAsync(th, xAfter, px, s); err != nil {
			return err
		}
		if err := cu.DtoHAsync(th, ctrAfter[:], ctr, s); err != nil {
			return err
		}
		// The unfused launches (silu_mul_q rewrites g, so they come after).
		switch c.mode {
		case ProNorm:
			var a cu.Ptr
			if c.add {
				a = padd
			}
			err = l.AddRMSNormQ(pxRef, a, pxn, pnw, 1, k, eps, 0, pxqRef, quant.Q8_K)
		case ProSiLU:
			err = l.SiLUMulQ(pg, pu, 1, k, pxqRef, quant.Q8_K)
		case ProQuant:
			err = l.Quantize(quant.Q8_K, pxqRef, pg, k)
		case ProStage:
			err = th.DtoDAsync(pxqRef, pq, len(xq), s)
		}
		if err != nil {
			return err
		}
		if err := cu.DtoHAsync(th, xRefAfter, pxRef, s); err != nil {
			return err
		}
		for i, w := range ws {
			if err := l.MatMul(outs[i], w, pxqRef, 1); err != nil {
				return err
			}
			want[i] = make([]float32, w.Rows)
			if err := cu.DtoHAsync(th, want[i], outs[i], s); err != nil {
				return err
			}
		}
		return th.Sync(s)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		requireSameBits(t, fmt.Sprintf("product %d (%s), first run", i, c.types[i]), got1[i], want[i])
		requireSameBits(t, fmt.Sprintf("product %d (%s)", i, c.types[i]), got[i], want[i])
	}
	requireSameBits(t, "the residual x after the launch", xAfter, xRefAfter)
	if ctrAfter[0] != 0 {
		t.Errorf("the residual's counter is %d after the launch, want 0", ctrAfter[0])
	}
}

// The cuda-pro launch refuses what it does not take with an error.
func TestProRefuses(t *testing.T) {
	needCUDA(t)
	e, err := OpenEngine()
	if err != nil {
		t.Fatal(err)
	}
	w := Weights{Type: quant.Q4_K, Rows: 1, Cols: 256}
	err = e.Do(func(l *Launcher) error {
		for _, c := range []struct {
			rows int
			p    Prologue
			k    int
			w    []Weights
			want string
		}{
			{3, Prologue{}, 256, []Weights{w}, "rows a warp"},
			{1, Prologue{}, 256, nil, "one to three"},
			{1, Prologue{Mode: 7}, 256, []Weights{w}, "no prologue"},
			{1, Prologue{}, 100, []Weights{w}, "multiple of 256"},
			{1, Prologue{Mode: ProSiLU}, 16384, []Weights{{Type: quant.Q4_K, Rows: 1, Cols: 16384}}, "48 KiB"},
			{1, Prologue{Mode: ProNorm, Add: 1}, 256, []Weights{w}, "counter"},
			{1, Prologue{}, 256, []Weights{{Type: quant.Q8_0, Rows: 1, Cols: 256}}, "no kernel for Q8_0"},
			{1, Prologue{}, 512, []Weights{w}, "columns"},
		} {
			dst := make([]cu.Ptr, len(c.w))
			err := l.MatVecPro(c.rows, c.p, c.k, dst, c.w)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("rows %d %+v k %d: %v, want an error with %q", c.rows, c.p, c.k, err, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
