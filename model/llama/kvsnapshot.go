package llama

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/damascus-llm/damascus/quant"
)

// kvSnapshotMagic starts a KV cache snapshot (WriteKV): "DKV1".
const kvSnapshotMagic = 0x31564b44

// kvSnapshotHeader is what a snapshot's cache must match to be read back.
type kvSnapshotHeader struct {
	Magic, Type, Layers, KVHeads, HeadDim, Pos uint32
}

// WriteKV writes the positions in the KV cache to w: a header (type,
// layers, KV heads, head size, positions) and every layer's keys and values
// head by head, the cache's own bits. A bench fills a long history once and
// reads it back in later processes (ledger e2e --depth-snapshot). The CPU's
// cache only.
func (c *Context) WriteKV(w io.Writer) error {
	if _, ok := c.b.(*cpuBackend); !ok {
		return fmt.Errorf("KV cache snapshot: the cache of device %s is not in host memory", c.opts.Device)
	}
	kv := c.kv
	bw := bufio.NewWriterSize(w, 1<<20)
	h := kvSnapshotHeader{kvSnapshotMagic, uint32(kv.typ), uint32(c.m.Config.Layers), uint32(kv.kvHeads), uint32(kv.headDim), uint32(kv.pos)}
	if err := binary.Write(bw, binary.LittleEndian, h); err != nil {
		return fmt.Errorf("KV cache snapshot: %w", err)
	}
	if err := kv.eachHead(func(b []byte) error { _, err := bw.Write(b); return err }); err != nil {
		return fmt.Errorf("KV cache snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("KV cache snapshot: %w", err)
	}
	return nil
}

// ReadKV replaces the KV cache with a snapshot WriteKV made: the same cache
// type and model shape, no more positions than the context holds.
// Evaluation continues after the snapshot's positions.
func (c *Context) ReadKV(r io.Reader) error {
	if _, ok := c.b.(*cpuBackend); !ok {
		return fmt.Errorf("KV cache snapshot: the cache of device %s is not in host memory", c.opts.Device)
	}
	kv := c.kv
	var h kvSnapshotHeader
	if err := binary.Read(r, binary.LittleEndian, &h); err != nil {
		return fmt.Errorf("KV cache snapshot: reading its header: %w", err)
	}
	if h.Magic != kvSnapshotMagic {
		return errors.New("KV cache snapshot: not a Damascus KV cache snapshot (bad magic)")
	}
	want := kvSnapshotHeader{kvSnapshotMagic, uint32(kv.typ), uint32(c.m.Config.Layers), uint32(kv.kvHeads), uint32(kv.headDim), h.Pos}
	if h != want {
		return fmt.Errorf("KV cache snapshot: made for a %s cache of %d layers × %d KV heads × %d, this context has a %s cache of %d × %d × %d",
			quant.Type(h.Type), h.Layers, h.KVHeads, h.HeadDim, kv.typ, want.Layers, want.KVHeads, want.HeadDim)
	}
	if int(h.Pos) > kv.nctx {
		return fmt.Errorf("KV cache snapshot: %d positions do not fit the context's %d", h.Pos, kv.nctx)
	}
	kv.pos = int(h.Pos)
	err := kv.eachHead(func(b []byte) error { _, err := io.ReadFull(r, b); return err })
	if err != nil {
		kv.pos = 0
		return fmt.Errorf("KV cache snapshot: reading %d positions: %w", h.Pos, err)
	}
	return nil
}

// eachHead calls f with the memory of every layer's keys, then values, of
// each KV head's first pos positions, in that order.
func (kv *kvCache) eachHead(f func([]byte) error) error {
	for l := range len(kv.k32) + len(kv.k16) {
		for h := range kv.kvHeads {
			var k, v []byte
			if kv.half() {
				k16, v16 := kv.head16(l, h, kv.pos)
				k, v = bytesOf(k16), bytesOf(v16)
			} else {
				k32, v32 := kv.head32(l, h, kv.pos)
				k, v = floatBytes(k32), floatBytes(v32)
			}
			for _, b := range [][]byte{k, v} {
				if len(b) == 0 {
					continue
				}
				if err := f(b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// floatBytes is the memory of x, little-endian on every platform built for.
func floatBytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}
