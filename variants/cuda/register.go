package cuda

import (
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// Feature is the ledger feature of every variant here: present when a CUDA
// device opens and the kernels compile (NVRTC) and load.
const Feature = "cuda"

// hostNote says what the ledger's timing of these variants measures.
const hostNote = "; host-slice form (upload, launch, download): `ledger run` times the copies too, kernel speed is the device-resident benchmarks of variants/cuda"

func init() {
	ledger.RegisterDeviceFeature(Feature, func() bool { return Available() == nil })
	regAs := func(op, name string, impl any, notes string) {
		ledger.Register(ledger.Variant{Op: op, Name: name, Family: ledger.FamilyCUDA, Features: []string{Feature},
			Impl: impl, Notes: notes + hostNote})
	}
	reg := func(op string, impl any, notes string) { regAs(op, "cuda", impl, notes) }
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		f := formats[wt]
		layout := "ggml's blocks as they are (rows 16-byte aligned)"
		if f.repack != nil {
			layout = "weights repacked on upload into 16-byte-aligned planes"
		}
		for _, u := range unrolls {
			inFlight := "one step of a row's loads in flight at a time (each lane waits out the HBM latency once per step)"
			if u.u > 1 {
				inFlight = fmt.Sprintf("%d steps of a row's weight loads issued before the first is used", u.u)
			}
			regAs(ledger.MatVecOp(wt), u.name, hostMatVec(f, unrolledMV(u.u)), "one warp per row, 16-byte weight loads, dp4a, "+inFlight+"; "+layout)
		}
		if f.mve != "" {
			regAs(ledger.MatVecOp(wt), "cuda-early", hostMatVec(f, earlyMV(1)),
				"cuda's lanes and sums (the same bits), the first step's weight loads issued before griddepcontrol.wait (in the engine's graph, under the kernel before it); "+layout)
			regAs(ledger.MatVecOp(wt), "cuda-early2", hostMatVec(f, earlyMV(2)),
				"cuda-early software-pipelined: every later step's weight loads issued before the step ahead of them is used (two steps' weights in registers); the same bits; "+layout)
		}
		if XSTakes(wt) {
			for _, x := range xsVariants {
				regAs(ledger.MatVecOp(wt), x.name, hostMatVec(f, xsMV(x.rows)), fmt.Sprintf(
					"cuda's lanes and sums (the same bits), with the Q8_K row staged in shared memory once a block of %d warps (quants, scales and sums in planes: a step's activations are 16-byte shared loads) and %d row(s) a warp, their weight loads of a step issued together; %s", xsWarps, x.rows, layout))
			}
		}
		reg(ledger.MatMulOp(wt), hostMatMul(f, false, false), "the matvec's warp per row over 8 tokens a block (correctness first: no tensor cores); "+layout)
		if f.mma != "" {
			regAs(ledger.MatMulOp(wt), "cuda-mma", hostMatMul(f, true, false),
				"tensor cores (int8 mma.sync): 64 rows × 64 tokens a block, quants unpacked to int8 in shared memory per super-block, sub-block scales applied in float; "+layout)
			regAs(ledger.MatMulOp(wt), "cuda-mma-int", hostMatMul(f, true, true),
				"cuda-mma with each sub-block's product scaled in int32 (ggml's Σ sc·dot) and floats once per super-block: four integer multiply-adds a tile product instead of eight float ones; Q6_K unpacked signed (q − 32), so no offset term; "+layout)
		}
	}
	registerPipe() // cuda-mma-pipe (mma_pipe.go)
	for _, t := range []quant.Type{quant.Q8_K, quant.Q8_0} {
		reg(ledger.QuantizeOp(t), ledger.Quantize(hostQuantize(t)), "one warp per block, the reference quantizer's roundings")
	}
	reg(ledger.OpRMSNorm, ledger.RMSNorm(hostRMSNorm), "one block, sum of squares in double")
	reg(ledger.OpSiLUMul, ledger.SiLUMul(hostSiLUMul), "grid-stride, expf")
	reg(ledger.OpSoftmax, ledger.Softmax(hostSoftmax), "one block, sum in double")
	reg(ledger.OpRoPE, ledger.RoPE(hostRoPE), "one thread per rotated pair")
	reg(ledger.OpAttention, ledger.Attention(hostAttention), "flash-decoding: the context split into chunks (about two blocks per SM), then combined")
	regAs(ledger.OpAttention, "cuda-flash", ledger.Attention(hostFlashAttention("cuda-flash")),
		"the engine's decode attention: 32 equal splits per KV head at any depth, online softmax over tiles of 32 positions, query in registers; heads of up to 128")
	regAs(ledger.OpAttention, "cuda-flash-wv", ledger.Attention(hostFlashAttention("cuda-flash-wv")),
		"cuda-flash with a tile's keys and values loaded at once (one round trip a tile, not one a position) and weighted in the warp that scored them, lanes over dimensions; the warps' sums meet once at the end")
	regAs(ledger.OpAttention, "cuda-flash-fold", ledger.Attention(hostFlashAttention("cuda-flash-fold")),
		"cuda-flash's splits with each warp's keys and values of a pass loaded at once (16 bytes a lane), its 32 partial scores summed in one transposed butterfly, its online softmax in registers, and the splits combined by the last block to finish (no second kernel); heads of 32, 64 or 128 (others run cuda-flash)")
	registerPersistent()
	registerMega()
	registerPrefillAttention() // cuda-fattn (fattn.go)
}
