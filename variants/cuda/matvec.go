package cuda

import (
	"fmt"
	"unsafe"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

func sizeOf[T any](z T) int { return int(unsafe.Sizeof(z)) }

// poison is the NaN every float output starts as on the device, so an
// output a kernel leaves unwritten comes back NaN and fails the gate.
const poison = 0x7fa0bad0

// A format is how one weight type lives on the device and which kernels
// take it.
type format struct {
	wt     quant.Type
	mv, mm string // matvec (one step at a time) and 8-token matmul kernels
	mma    string // the tensor-core matmul, where there is one
	mmai   string // the same with integer sub-block scaling (cuda-mma-int)
	mve    string // cuda-early's matvec, where there is one (+"2": cuda-early2's)
	// devRow is the bytes of one row of k values on the device; repack,
	// when set, writes rows of the ggml layout (src) in the device layout.
	devRow func(k int) int
	repack func(dst, src []byte, rows, k int)
}

var formats = map[quant.Type]*format{
	quant.Q4_K: {wt: quant.Q4_K, mv: "q4k_mv", mve: "q4k_mv_e", mm: "q4k_mm8", mma: "q4k_mma", mmai: "q4k_mmai", devRow: func(k int) int { return k / 256 * 144 }},
	quant.Q6_K: {wt: quant.Q6_K, mv: "q6k_mv", mve: "q6k_mv_e", mm: "q6k_mm8", mma: "q6k_mma", mmai: "q6k_mmai", devRow: q6kDevRow, repack: repackQ6K},
	quant.Q8_0: {wt: quant.Q8_0, mv: "q80_mv", mm: "q80_mm8", devRow: q80DevRow, repack: repackQ8_0},
}

func pad16(n int) int { return (n + 15) &^ 15 }

// q6kDevRow: per row, nb×192 bytes of quants (ql then qh of each block),
// nb×16 bytes of scales, nb halves d padded to 16 bytes.
func q6kDevRow(k int) int { nb := k / 256; return 208*nb + pad16(2*nb) }

// q80DevRow: per row, nb halves d padded to 16 bytes, then nb×32 quants.
func q80DevRow(k int) int { nb := k / 32; return pad16(2*nb) + 32*nb }

// repackQ6K lays Q6_K rows (210-byte blocks: ql[128], qh[64], scales[16],
// d) out as q6kDevRow says.
func repackQ6K(dst, src []byte, rows, k int) {
	nb := k / 256
	dr := q6kDevRow(k)
	for r := range rows {
		s, d := src[r*nb*210:(r+1)*nb*210], dst[r*dr:(r+1)*dr]
		for b := range nb {
			blk := s[b*210 : (b+1)*210]
			copy(d[b*192:], blk[:192])
			copy(d[192*nb+16*b:], blk[192:208])
			copy(d[208*nb+2*b:], blk[208:210])
		}
		clear(d[208*nb+2*nb:])
	}
}

// repackQ8_0 lays Q8_0 rows (34-byte blocks: d, qs[32]) out as q80DevRow
// says.
func repackQ8_0(dst, src []byte, rows, k int) {
	nb := k / 32
	dr, qoff := q80DevRow(k), pad16(2*nb)
	for r := range rows {
		s, d := src[r*nb*34:(r+1)*nb*34], dst[r*dr:(r+1)*dr]
		clear(d[2*nb : qoff])
		for b := range nb {
			copy(d[2*b:], s[b*34:b*34+2])
			copy(d[qoff+32*b:], s[b*34+2:b*34+34])
		}
	}
}

// deviceWeights returns w (rows of k values, ggml layout) in f's device
// layout: w itself for a native format.
func (f *format) deviceWeights(w []byte, rows, k int) []byte {
	rb, _ := quant.RowSize(f.wt, int64(k))
	w = w[:rows*int(rb)]
	if f.repack == nil {
		return w
	}
	out := make([]byte, rows*f.devRow(k))
	f.repack(out, w, rows, k)
	return out
}

// rowsPerBlock is the rows (one warp each) of a 128-thread block.
const rowsPerBlock = 4

// unrolls are the matvec variants: how many steps of a row's weight loads
// each lane has in flight (the kernels' U), and the variant's name.
var unrolls = []struct {
	u    int
	name string
}{{1, "cuda"}, {2, "cuda-u2"}, {4, "cuda-u4"}}

// mvKernel is f's matvec kernel with u steps in flight.
func (f *format) mvKernel(u int) string {
	if u == 1 {
		return f.mv
	}
	return fmt.Sprintf("%s_u%d", f.mv, u)
}

// matVec enqueues dst[r] = W[r]·x on s with the kernel of u steps in
// flight: w in f's device layout, x one activation row
// (ActivationType(wt)), all device pointers.
func (r *gpu) matVec(t *cu.Thread, s cu.Stream, f *format, u int, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
	return r.launchRows(t, s, f.mvKernel(u), dst, w, rows, x, k)
}

// launchRows enqueues the warp-per-row matvec kernel name (any of the
// _mv entries of matvec.cu: a warp a row, four rows a block).
func (r *gpu) launchRows(t *cu.Thread, s cu.Stream, name string, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
	return t.Launch(r.fns[name], cu.D1((rows+rowsPerBlock-1)/rowsPerBlock), cu.D1(32*rowsPerBlock), 0, s,
		dst.Arg(), w.Arg(), cu.I32(rows), x.Arg(), cu.I32(k))
}

// matMulMMA enqueues f's tensor-core matmul (mma.cu; integer sub-block
// scaling with integer): 64 rows × 64 tokens a block.
func (r *gpu) matMulMMA(t *cu.Thread, s cu.Stream, f *format, integer bool, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
	name := f.mma
	if integer {
		name = f.mmai
	}
	if name == "" {
		return fmt.Errorf("matmul: no tensor-core kernel for %s", f.wt)
	}
	if (n+63)/64 > 65535 {
		return fmt.Errorf("matmul: %d activation rows, at most %d", n, 65535*64)
	}
	return t.Launch(r.fns[name], cu.D2((rows+63)/64, (n+63)/64), cu.D1(128), 0, s,
		dst.Arg(), cu.I32(ldd), w.Arg(), cu.I32(rows), x.Arg(), cu.I32(n), cu.I32(k))
}

// matMul enqueues dst[j*ldd+r] = W[r]·X[j] for n activation rows.
func (r *gpu) matMul(t *cu.Thread, s cu.Stream, f *format, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
	const nt = 8
	if (n+nt-1)/nt > 65535 {
		return fmt.Errorf("matmul: %d activation rows, at most %d", n, 65535*nt)
	}
	return t.Launch(r.fns[f.mm], cu.D2((rows+rowsPerBlock-1)/rowsPerBlock, (n+nt-1)/nt), cu.D1(32*rowsPerBlock), 0, s,
		dst.Arg(), cu.I32(ldd), w.Arg(), cu.I32(rows), x.Arg(), cu.I32(n), cu.I32(k))
}

// mvLaunch enqueues one single-token product dst = W·x (w in f's device
// layout, rows of k values) on s.
type mvLaunch func(r *gpu, t *cu.Thread, s cu.Stream, f *format, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error

// unrolledMV is the warp-per-row kernel with u steps in flight.
func unrolledMV(u int) mvLaunch {
	return func(r *gpu, t *cu.Thread, s cu.Stream, f *format, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
		return r.matVec(t, s, f, u, dst, w, rows, x, k)
	}
}

// earlyVariants are the cuda-early variants by the kernels' E: the first
// step's weights loaded before the PDL wait (1), and every later step's
// loads issued a step ahead too (2).
var earlyVariants = []struct {
	e    int
	name string
}{{1, "cuda-early"}, {2, "cuda-early2"}}

// earlyMV is f's cuda-early kernel of that E.
func earlyMV(e int) mvLaunch {
	return func(r *gpu, t *cu.Thread, s cu.Stream, f *format, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
		return r.matVecEarly(t, s, f, e, dst, w, rows, x, k)
	}
}

// earlyKernel names the cuda-early kernel of E e (1 or 2) with base name
// base (f.mve, "mv_multi_e").
func earlyKernel(base string, e int) string {
	if e == 2 {
		return base + "2"
	}
	return base
}

// matVecEarly enqueues f's cuda-early matvec of E e.
func (r *gpu) matVecEarly(t *cu.Thread, s cu.Stream, f *format, e int, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
	if f.mve == "" || e < 1 || e > 2 {
		return fmt.Errorf("matvec: no cuda-early kernel of E %d for %s", e, f.wt)
	}
	return r.launchRows(t, s, earlyKernel(f.mve, e), dst, w, rows, x, k)
}

// xsMV is the cuda-xs kernel of rows rows a warp.
func xsMV(rows int) mvLaunch {
	return func(r *gpu, t *cu.Thread, s cu.Stream, f *format, dst, w cu.Ptr, n int, x cu.Ptr, k int) error {
		return r.matVecXS(t, s, rows, x, k, []XSSeg{{Dst: dst, W: w, Rows: n, Type: f.wt}})
	}
}

// hostMatVec is the ledger.MatVec of f's kernel mv: upload, launch,
// download.
func hostMatVec(f *format, mv mvLaunch) ledger.MatVec {
	return func(dst []float32, w, xq []byte, k int) {
		rows := len(dst)
		if rows == 0 {
			return
		}
		dw := f.deviceWeights(w, rows, k)
		xb := actRowBytes(f.wt, k)
		host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
			pw, px, err := uploadWX(r, t, s, dw, xq[:xb])
			if err != nil {
				return err
			}
			pd, err := r.poisoned(t, s, "dst", rows)
			if err != nil {
				return err
			}
			if err := mv(r, t, s, f, pd, pw, rows, px, k); err != nil {
				return err
			}
			return cu.DtoHAsync(t, dst, pd, s)
		})
	}
}

// mmLaunch enqueues one product of n activation rows, dst[j*ldd+r] =
// W[r]·X[j] (w in f's device layout, rows of k values), on s.
type mmLaunch func(r *gpu, t *cu.Thread, s cu.Stream, f *format, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error

// hostMatMul is the ledger.MatMul of f (on the tensor cores with mma).
func hostMatMul(f *format, mma, integer bool) ledger.MatMul {
	return hostLaunchMatMul(f, func(r *gpu, t *cu.Thread, s cu.Stream, f *format, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
		if mma {
			return r.matMulMMA(t, s, f, integer, dst, ldd, w, rows, x, n, k)
		}
		return r.matMul(t, s, f, dst, ldd, w, rows, x, n, k)
	})
}

// hostLaunchMatMul is the ledger.MatMul of f's kernel mm: upload, launch,
// download. dst goes up and comes back whole, so the gaps between its
// columns (the caller's) are left as they were and an output the kernel
// misses keeps the caller's fill.
func hostLaunchMatMul(f *format, mm mmLaunch) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		if rows == 0 || n == 0 {
			return
		}
		dw := f.deviceWeights(w, rows, k)
		xb := actRowBytes(f.wt, k)
		host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
			pw, px, err := uploadWX(r, t, s, dw, xq[:n*xb])
			if err != nil {
				return err
			}
			pd, err := upload(r, t, s, "dst", dst)
			if err != nil {
				return err
			}
			if err := mm(r, t, s, f, pd, ldd, pw, rows, px, n, k); err != nil {
				return err
			}
			return cu.DtoHAsync(t, dst, pd, s)
		})
	}
}

// uploadWX copies a product's device-layout weights and activations into
// the w and x scratch buffers on s (every host-slice matvec and matmul).
func uploadWX(r *gpu, t *cu.Thread, s cu.Stream, w, x []byte) (pw, px cu.Ptr, err error) {
	if pw, err = upload(r, t, s, "w", w); err != nil {
		return 0, 0, err
	}
	if px, err = upload(r, t, s, "x", x); err != nil {
		return 0, 0, err
	}
	return pw, px, nil
}

// actRowBytes is the bytes of one activation row of k values that a
// product over weights of wt reads (ledger.ActivationType(wt)).
func actRowBytes(wt quant.Type, k int) int {
	n, _ := quant.RowSize(ledger.ActivationType(wt), int64(k))
	return int(n)
}

// xsWarps is kernels/matvec.cu's XS_WARPS: cuda-xs's warps a block.
const xsWarps = 8

// xsVariants are the cuda-xs matvec variants (kernels/matvec.cu's mv_xs1,
// _xs2, _xs4): the activation row staged in shared memory once a block,
// rows rows a warp with all their weight loads of a step issued at once.
var xsVariants = []struct {
	rows int
	name string
}{{1, "cuda-xs1"}, {2, "cuda-xs"}, {4, "cuda-xs4"}}

// XSRows is the cuda-xs variant of each rows-a-warp count the engine may
// pick (DAMASCUS_CUDA_MV), by that count.
func XSRows(rows int) bool { return rows == 1 || rows == 2 || rows == 4 }

// xsCode is mv_xs's code for the weight types it takes (Q8_K activations).
var xsCode = map[quant.Type]int{quant.Q4_K: 0, quant.Q6_K: 1}

// XSTakes reports whether the cuda-xs kernels take weights of typ.
func XSTakes(typ quant.Type) bool { _, ok := xsCode[typ]; return ok }

// xsShared is mv_xs's dynamic shared memory for rows of k values
// (kernels/matvec.cu's xs_shared).
func xsShared(k int) int { return k + 36*(k/256) }

// XSSeg is one product of a cuda-xs launch: Rows rows of Type at W (device
// layout) into Dst.
type XSSeg struct {
	Dst, W cu.Ptr
	Rows   int
	Type   quant.Type
}

// matVecXS enqueues one to three products over the one Q8_K row x (k
// values) with mv_xs<rows>.
func (r *gpu) matVecXS(t *cu.Thread, s cu.Stream, rows int, x cu.Ptr, k int, segs []XSSeg) error {
	if !XSRows(rows) {
		return fmt.Errorf("cuda-xs: no kernel of %d rows a warp (1, 2 or 4)", rows)
	}
	if len(segs) < 1 || len(segs) > 3 {
		return fmt.Errorf("cuda-xs: one to three products a launch, got %d", len(segs))
	}
	if k%256 != 0 || xsShared(k) > 48<<10 {
		return fmt.Errorf("cuda-xs: rows of %d values (want a multiple of 256 that fits 48 KiB of shared memory)", k)
	}
	args, blocks, err := xsSegArgs("cuda-xs", segs, rows)
	if err != nil {
		return err
	}
	return t.Launch(r.fns[fmt.Sprintf("mv_xs%d", rows)], cu.D1(blocks), cu.D1(32*xsWarps), xsShared(k), s,
		append([]cu.Arg{x.Arg(), cu.I32(k)}, args...)...)
}

// xsSegArgs are the three product arguments of an mv_xs or mv_pro launch
// (unused ones zero) and the groups of rows a warp rows rows a warp that
// segs take; who names the kernel family in errors.
func xsSegArgs(who string, segs []XSSeg, rows int) ([]cu.Arg, int, error) {
	var args []cu.Arg
	per, groups := xsWarps*rows, 0
	for i := range 3 {
		if i >= len(segs) {
			args = append(args, cu.Ptr(0).Arg(), cu.Ptr(0).Arg(), cu.I32(0), cu.I32(0))
			continue
		}
		c, ok := xsCode[segs[i].Type]
		if !ok {
			return nil, 0, fmt.Errorf("%s: no kernel for %s weights (Q4_K, Q6_K)", who, segs[i].Type)
		}
		args = append(args, segs[i].Dst.Arg(), segs[i].W.Arg(), cu.I32(segs[i].Rows), cu.I32(c))
		groups += (segs[i].Rows + per - 1) / per
	}
	return args, groups, nil
}

// xsSegs pairs products' destinations with their weights, all over k
// columns.
func xsSegs(who string, dst []cu.Ptr, w []Weights, k int) ([]XSSeg, error) {
	segs := make([]XSSeg, len(w))
	for i := range w {
		if w[i].Cols != k {
			return nil, fmt.Errorf("%s: a product over %d columns in a launch over %d", who, w[i].Cols, k)
		}
		segs[i] = XSSeg{Dst: dst[i], W: w[i].P, Rows: w[i].Rows, Type: w[i].Type}
	}
	return segs, nil
}
