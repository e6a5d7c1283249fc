package llama

import (
	"fmt"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// kvCache holds every layer's keys and values, laid out
// [kvHead][position][headDim] so that one key/value head's history is
// contiguous for the attention kernels. It is float32 or 16-bit (F16 or BF16
// bits), never both.
type kvCache struct {
	typ              quant.Type
	nctx             int // positions it has room for
	kvHeads, headDim int
	pos              int // positions held
	k32, v32         [][]float32
	k16, v16         [][]uint16
}

func newKVCache(cfg Config, typ quant.Type, nctx int) *kvCache {
	c := &kvCache{typ: typ, nctx: nctx, kvHeads: cfg.KVHeads, headDim: cfg.HeadDim}
	kvd := cfg.KVDim()
	if typ != quant.F32 {
		c.k16, c.v16 = make([][]uint16, cfg.Layers), make([][]uint16, cfg.Layers)
		for l := range cfg.Layers {
			c.k16[l], c.v16[l] = make([]uint16, nctx*kvd), make([]uint16, nctx*kvd)
		}
		return c
	}
	c.k32, c.v32 = make([][]float32, cfg.Layers), make([][]float32, cfg.Layers)
	for l := range cfg.Layers {
		c.k32[l], c.v32[l] = make([]float32, nctx*kvd), make([]float32, nctx*kvd)
	}
	return c
}

// half reports whether the cache stores 16-bit values.
func (c *kvCache) half() bool { return c.k32 == nil }

// truncate drops the positions from n on.
func (c *kvCache) truncate(n int) error {
	if n < 0 || n > c.pos {
		return fmt.Errorf("truncate to %d: cache holds %d positions", n, c.pos)
	}
	c.pos = n
	return nil
}

// store writes one position's keys and values (every KV head) into layer l.
func (c *kvCache) store(l, pos int, k, v []float32) {
	hd := c.headDim
	for h := range c.kvHeads {
		c.storeHead(l, pos, h, k[h*hd:(h+1)*hd], v[h*hd:(h+1)*hd])
	}
}

// storeHead writes KV head h's key and value at one position of layer l,
// rounded to the cache's type.
func (c *kvCache) storeHead(l, pos, h int, k, v []float32) {
	hd := c.headDim
	off := (h*c.nctx + pos) * hd
	if !c.half() {
		copy(c.k32[l][off:off+hd], k)
		copy(c.v32[l][off:off+hd], v)
		return
	}
	narrow := quant.Float32ToFP16
	if c.typ == quant.BF16 {
		narrow = quant.Float32ToBF16
	}
	for i := range hd {
		c.k16[l][off+i] = narrow(k[i])
		c.v16[l][off+i] = narrow(v[i])
	}
}

// head32 is KV head h's first n keys and values of layer l (float32 cache).
func (c *kvCache) head32(l, h, n int) (k, v []float32) {
	base := h * c.nctx * c.headDim
	return c.k32[l][base : base+n*c.headDim], c.v32[l][base : base+n*c.headDim]
}

// head16 is KV head h's first n keys and values of layer l (16-bit cache).
func (c *kvCache) head16(l, h, n int) (k, v []uint16) {
	base := h * c.nctx * c.headDim
	return c.k16[l][base : base+n*c.headDim], c.v16[l][base : base+n*c.headDim]
}

// widen returns KV head h's first n keys and values of layer l (16-bit
// cache) as float32, exactly, in buf (2·n·headDim values).
func (c *kvCache) widen(buf []float32, widen ledger.Dequantize, l, h, n int) (k, v []float32) {
	hd := c.headDim
	k, v = buf[:n*hd], buf[n*hd:2*n*hd]
	k16, v16 := c.head16(l, h, n)
	widen(k, bytesOf(k16))
	widen(v, bytesOf(v16))
	return k, v
}

// bytesOf is the memory of u, little-endian on every platform built for.
func bytesOf(u []uint16) []byte {
	if len(u) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&u[0])), 2*len(u))
}
