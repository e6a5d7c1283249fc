package llama

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/variants/cuda"
)

// DecodeEnv picks how the GPU runs a decode step (one token with logits).
// Unset, "" or "graph": the launch-per-op path, 11 launches a layer in one
// recorded CUDA graph (the default). "persistent": the embedding, then one
// persistent kernel over every layer (variants/cuda persistent.cu: a block a
// multiprocessor, grid barriers between the layer's dependent steps), then
// the output norm and the head, recorded as a graph too. "persistent-layer":
// the same kernel launched once a layer. "mega": the persistent kernel's
// steps with every block's weight rows streamed through a ring in its
// shared memory ahead of the steps that read them (variants/cuda mega.cu;
// rope pairs adjacent, not NeoX's). Options after commas:
// "prefetch" (each warp asks L2 for its rows of the next step's matrix
// before each barrier), "blocks=N" (the grid; default one block a
// multiprocessor), "timeout=MS" (the barrier watchdog, default 1000 ms),
// "watchdog-test" (block 0 skips the first barrier: every step fails after
// the timeout; for TestPersistentWatchdog), "timing" (block 0 notes when
// each step and barrier ends; TestPersistentPhaseTimes), "ring=BYTES" (mega's ring at
// most BYTES a block, never less than three of its largest rounds).
// Both are bit-identical to the graph with the serial attention and both
// lost to the graph on the H200 (3B tg256: persistent ≈ 330, mega ≈ 290,
// the graph ≈ 520 tok/s; variants/cuda NOTES.md, sessions 10 and 16), so
// they stay opt-in.
const DecodeEnv = "DAMASCUS_CUDA_DECODE"

// persistentDecode is the backend's persistent decode: the kernel, how many
// layers a launch takes, and what the step around it reads.
type persistentDecode struct {
	k         *cuda.Persistent
	perLaunch int
	head      cuda.Weights
	norm      cu.Ptr
}

// decodeConfig parses DecodeEnv: nil for the launch-per-op path.
func decodeConfig(v string) (shape *cuda.PersistentShape, perLayer bool, err error) {
	words := strings.Split(v, ",")
	mega := false
	switch strings.TrimSpace(words[0]) {
	case "", "graph":
		if len(words) > 1 {
			return nil, false, fmt.Errorf("%s=%q: options without a persistent mode", DecodeEnv, v)
		}
		return nil, false, nil
	case "persistent":
	case "persistent-layer":
		perLayer = true
	case "mega":
		mega = true
	default:
		return nil, false, fmt.Errorf("%s=%q: want graph, persistent, persistent-layer or mega", DecodeEnv, v)
	}
	sh := &cuda.PersistentShape{Mega: mega}
	for _, w := range words[1:] {
		w = strings.TrimSpace(w)
		name, val, _ := strings.Cut(w, "=")
		n, nerr := strconv.Atoi(val)
		switch {
		case w == "prefetch":
			sh.Prefetch = true
		case w == "watchdog-test":
			sh.WatchdogTest = true
		case w == "timing":
			sh.Timing = true
		case name == "blocks" && nerr == nil && n > 0:
			sh.Blocks = n
		case name == "timeout" && nerr == nil && n > 0:
			sh.Timeout = time.Duration(n) * time.Millisecond
		case name == "ring" && nerr == nil && n > 0 && mega:
			sh.Ring = n
		default:
			return nil, false, fmt.Errorf("%s=%q: unknown option %q (prefetch, timing, blocks=N, timeout=MS; mega: ring=BYTES)", DecodeEnv, v, w)
		}
	}
	return sh, perLayer, nil
}

// setupPersistent sets the persistent decode up when DecodeEnv asks for it
// (on the device thread, after upload).
func (b *cudaBackend) setupPersistent(m *Model) error {
	sh, perLayer, err := decodeConfig(os.Getenv(DecodeEnv))
	if err != nil || sh == nil {
		return err
	}
	cfg := b.cfg
	sh.Dim, sh.Heads, sh.KVHeads, sh.HeadDim, sh.FFN, sh.NCtx = cfg.Dim, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.FFNDim, b.nctx
	sh.Eps, sh.Scale, sh.NeoX = cfg.RMSEps, float32(1/math.Sqrt(float64(cfg.HeadDim))), ropeNeoX
	layers := make([]cuda.PersistentLayer, len(m.Layers))
	for i := range m.Layers {
		L := &m.Layers[i]
		w := func(x *Matrix) cuda.Weights { return b.weights[&x.Data[0]] }
		layers[i] = cuda.PersistentLayer{Q: w(&L.Q), K: w(&L.K), V: w(&L.V), O: w(&L.Out), Gate: w(&L.Gate), Up: w(&L.Up), Down: w(&L.Down),
			AttnNorm: b.norms[&L.AttnNorm[0]], FFNNorm: b.norms[&L.FFNNorm[0]], KC: b.kc[i], VC: b.vc[i]}
	}
	if !cuda.DecodeAttentionFits(cfg.HeadDim) {
		return fmt.Errorf("%s: heads of %d", DecodeEnv, cfg.HeadDim)
	}
	k, err := b.l.NewPersistent(*sh, layers, b.twinOf(b.s.x), b.twinOf(b.s.q), b.po, b.pml, b.pos, b.cosT, b.sinT)
	if err != nil {
		return fmt.Errorf("%s: %w", DecodeEnv, err)
	}
	p := &persistentDecode{k: k, perLaunch: len(m.Layers), head: b.weights[&m.Output.Data[0]], norm: b.norms[&m.Norm[0]]}
	if perLayer {
		p.perLaunch = 1
	}
	b.pers = p
	return nil
}

// persistentStep enqueues a decode step (one token, with logits) on the
// persistent kernel: the embedding, the layers, the output norm quantized
// for the head, the head.
func (b *cudaBackend) persistentStep() error {
	cfg, l, p := b.cfg, b.l, b.pers
	x := b.twinOf(b.s.x)
	b.act.src = 0
	if err := l.Embed(x, b.embed, b.tokens, 1); err != nil {
		return err
	}
	for l0 := 0; l0 < cfg.Layers; l0 += p.perLaunch {
		if err := p.k.Run(l, l0, min(l0+p.perLaunch, cfg.Layers)); err != nil {
			return err
		}
	}
	at := ledger.ActivationType(p.head.Type)
	if err := l.AddRMSNormQ(x, 0, b.twinOf(b.s.xn), p.norm, 1, cfg.Dim, cfg.RMSEps, 0, b.xq, at); err != nil {
		return err
	}
	return l.MatMul(b.logits, p.head, b.xq, 1)
}

// phaseTimes is the persistent kernel's Timing marks of the last step (on
// the device thread): nil without DecodeEnv's timing.
func (b *cudaBackend) phaseTimes() ([]int64, error) {
	if b.pers == nil {
		return nil, fmt.Errorf("%s: no persistent decode", DecodeEnv)
	}
	var out []int64
	err := b.e.Do(func(l *cuda.Launcher) error {
		var err error
		out, err = b.pers.k.PhaseTimes(l)
		return err
	})
	return out, err
}
