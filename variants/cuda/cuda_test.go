package cuda

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/internal/numcmp"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
)

// needCUDA skips t where the variants cannot run, saying why ("no CUDA
// device: libcuda.so.1 not found …").
func needCUDA(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
}

// ops are the ops this family covers.
var ops = []string{
	ledger.MatVecOp(quant.Q4_K), ledger.MatVecOp(quant.Q6_K), ledger.MatVecOp(quant.Q8_0),
	ledger.MatMulOp(quant.Q4_K), ledger.MatMulOp(quant.Q6_K), ledger.MatMulOp(quant.Q8_0),
	ledger.QuantizeOp(quant.Q8_K), ledger.QuantizeOp(quant.Q8_0),
	ledger.OpRMSNorm, ledger.OpSiLUMul, ledger.OpSoftmax, ledger.OpRoPE, ledger.OpAttention,
}

// TestConformance runs every cuda variant through the ledger's
// conformance suite: without a device each is a logged skip for want of
// "cuda"; the host-side checks below put the kernels through the suite's
// deeper checks.
func TestConformance(t *testing.T) { ledgertest.Run(t) }

func TestRegistered(t *testing.T) {
	for _, op := range ops {
		v, ok := ledger.Lookup(op, "cuda")
		if !ok {
			t.Errorf("%s has no cuda variant", op)
			continue
		}
		if v.Family != ledger.FamilyCUDA || len(v.Features) != 1 || v.Features[0] != Feature {
			t.Errorf("%s: family %s, features %v", v.ID(), v.Family, v.Features)
		}
	}
}

// TestGate runs the ledger's gate over every cuda variant at every shape of
// its op (DAMASCUS_CUDA_GATE_SHAPES=tails|real|1B|3B narrows it). Without
// a device, every variant must come out skipped for want of "cuda" (at the
// tail shapes: the references of the real ones take long), never failed.
func TestGate(t *testing.T) {
	sel := gate.Shapes(os.Getenv("DAMASCUS_CUDA_GATE_SHAPES"))
	noDevice := Available()
	if noDevice != nil {
		sel = gate.TailShapes
	}
	res, err := gate.Run(ledger.Default, gate.Options{Families: []string{string(ledger.FamilyCUDA)}, Shapes: sel, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 {
		t.Fatal("the gate selected no cuda variant")
	}
	if noDevice != nil {
		for _, r := range res {
			if r.Outcome != gate.Skip || r.Error != "needs cuda" {
				t.Errorf("without a device: %v", r)
			}
		}
		t.Skipf("%d checks skipped as they should be: %v", len(res), noDevice)
	}
	for _, r := range res {
		if r.Outcome != gate.Pass {
			t.Errorf("%v", r)
		} else {
			t.Logf("pass %-14s %-20s NMSE %.3g max-abs %.3g", r.Op, r.Shape, r.NMSE, r.MaxAbs)
		}
	}
}

// The shared kernel tests of every family: adversarial blocks (largest
// scales, most negative quants), odd lengths and head layouts, guards.

func TestMatVec(t *testing.T) {
	needCUDA(t)
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		for _, u := range unrolls {
			t.Run(wt.String()+"/"+u.name, func(t *testing.T) { ledgertest.MatVec(t, wt, hostMatVec(formats[wt], unrolledMV(u.u))) })
		}
		for _, x := range xsVariants {
			if XSTakes(wt) {
				t.Run(wt.String()+"/"+x.name, func(t *testing.T) { ledgertest.MatVec(t, wt, hostMatVec(formats[wt], xsMV(x.rows))) })
			}
		}
		for _, e := range earlyVariants {
			if formats[wt].mve != "" {
				t.Run(wt.String()+"/"+e.name, func(t *testing.T) { ledgertest.MatVec(t, wt, hostMatVec(formats[wt], earlyMV(e.e))) })
			}
		}
	}
}

func TestQuantize(t *testing.T) {
	needCUDA(t)
	for _, typ := range []quant.Type{quant.Q8_K, quant.Q8_0} {
		t.Run(typ.String(), func(t *testing.T) { ledgertest.Quantize(t, typ, hostQuantize(typ)) })
	}
}

func TestOps(t *testing.T) {
	needCUDA(t)
	t.Run("rmsnorm", func(t *testing.T) { ledgertest.RMSNorm(t, hostRMSNorm) })
	t.Run("silu_mul", func(t *testing.T) { ledgertest.SiLUMul(t, hostSiLUMul) })
	t.Run("softmax", func(t *testing.T) { ledgertest.Softmax(t, hostSoftmax) })
	t.Run("rope", func(t *testing.T) { ledgertest.RoPE(t, hostRoPE) })
}

func TestAttention(t *testing.T) {
	needCUDA(t)
	ledgertest.Attention(t, hostAttention)
}

// TestQuantizeExact requires the device quantizers' bytes to equal the
// reference quantizer's on random activations (the gate allows a step of
// rounding; these kernels copy its arithmetic, so they should not need it).
func TestQuantizeExact(t *testing.T) {
	needCUDA(t)
	r := ledgertest.NewRand(5)
	for _, typ := range []quant.Type{quant.Q8_K, quant.Q8_0} {
		for _, n := range []int{256, 3072, 8192} {
			x := ledgertest.Floats(r, n)
			x[7] = -x[3] // equal magnitudes: the first must win (Q8_K's sign)
			want := make([]byte, n/typ.BlockSize()*typ.TypeSize())
			if err := quant.Quantize(typ, x, want); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(want))
			hostQuantize(typ)(got, x)
			if i := numcmp.FirstDiff(got, want); i >= 0 {
				t.Errorf("%s n=%d: byte %d is %#02x, the reference quantizer's %#02x", typ, n, i, got[i], want[i])
			}
		}
	}
}

// TestKernelResources logs what the driver says of each kernel and fails on
// local memory (spills or run-time-indexed arrays), but for the instances
// that declare their spills (PipeTile.spills: cuda-mma-pipe2's 128-register
// budget; TestMMAPipeNoSpills holds the others).
func TestKernelResources(t *testing.T) {
	needCUDA(t)
	info, arch, err := KernelInfo()
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, p := range PipeTiles {
		for _, k := range p.kernels {
			declared[k] = p.spills
		}
	}
	t.Logf("compiled for %s", arch)
	for _, f := range sourceFiles {
		for _, k := range f.kernels {
			fi := info[k]
			t.Logf("%-14s %3d registers, %d local bytes, %d static shared bytes, ≤%d threads", k, fi.Registers, fi.LocalBytes, fi.StaticShared, fi.MaxThreads)
			if fi.LocalBytes > 0 && declared[k] {
				t.Logf("%s: %d bytes of local memory, declared (its instance spills by design)", k, fi.LocalBytes)
				continue
			}
			if fi.LocalBytes > 0 {
				t.Errorf("%s uses %d bytes of local memory per thread", k, fi.LocalBytes)
			}
		}
	}
}

// The device layouts: repacking and unpacking again gives the ggml rows
// back, and the planes sit where the kernels read them.
func TestRepack(t *testing.T) {
	r := ledgertest.NewRand(9)
	for _, c := range []struct {
		wt       quant.Type
		rows, nb int
	}{{quant.Q6_K, 3, 1}, {quant.Q6_K, 5, 12}, {quant.Q8_0, 3, 1}, {quant.Q8_0, 7, 96}, {quant.Q8_0, 2, 9}} {
		f := formats[c.wt]
		var src []byte
		k := c.nb * c.wt.BlockSize()
		if c.wt == quant.Q6_K {
			src = ledgertest.Q6K(r, c.rows*c.nb, ledgertest.Random)
		} else {
			src = ledgertest.Q8_0(r, c.rows*c.nb, ledgertest.Random)
		}
		dev := f.deviceWeights(src, c.rows, k)
		if len(dev) != c.rows*f.devRow(k) || f.devRow(k)%16 != 0 {
			t.Fatalf("%s: %d bytes for %d rows of %d (row %d bytes, not 16-aligned?)", c.wt, len(dev), c.rows, k, f.devRow(k))
		}
		back := make([]byte, len(src))
		bs := c.wt.TypeSize()
		for row := range c.rows {
			d := dev[row*f.devRow(k):]
			for b := range c.nb {
				blk := back[(row*c.nb+b)*bs:]
				if c.wt == quant.Q6_K {
					copy(blk[:192], d[192*b:])
					copy(blk[192:208], d[192*c.nb+16*b:])
					copy(blk[208:210], d[208*c.nb+2*b:])
				} else {
					copy(blk[:2], d[2*b:])
					copy(blk[2:34], d[pad16(2*c.nb)+32*b:])
				}
			}
		}
		if !bytes.Equal(back, src) {
			t.Errorf("%s %dx%d: unpacking the device layout does not give the rows back", c.wt, c.rows, k)
		}
	}
}

func TestNoDeviceError(t *testing.T) {
	if _, err := cu.Open(); err == nil {
		t.Skip("a device is here")
	}
	err := Available()
	if !errors.Is(err, cu.ErrNoDevice) || !strings.Contains(err.Error(), "no CUDA device") {
		t.Fatalf("Available without a device: %v, want an error wrapping cuda.ErrNoDevice", err)
	}
	if ledger.HasFeature(Feature) {
		t.Fatal("feature cuda present without a device")
	}
}

// TestSkipKernels: the ablation list sets exactly the kernels it names and
// refuses a name that is no kernel (no GPU needed).
func TestSkipKernels(t *testing.T) {
	fns := map[string]cu.Function{"a": 1, "b": 2, "c": 3}
	var th cu.Thread
	if err := skipKernels(&th, fns, "a, c"); err != nil {
		t.Fatal(err)
	}
	if !th.Skip[1] || th.Skip[2] || !th.Skip[3] {
		t.Fatalf("skip set %v, want functions 1 and 3", th.Skip)
	}
	if err := skipKernels(&th, fns, "a,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown kernel: got %v, want an error naming it", err)
	}
}
