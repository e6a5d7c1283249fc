// Package requant converts a GGUF model to another llama.cpp file type with
// this project's own quantizers (quant): every tensor is dequantized
// to float32 and quantized again to the type llama.cpp's mix gives it
// (model/ftype), as llama.cpp's llama-quantize does.
package requant

import (
	"fmt"
	"io"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/rowstream"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/quant"
)

// A Tensor is one line of the plan: a tensor and the type it will have.
type Tensor struct {
	Name string
	Dims []uint64
	From quant.Type
	To   quant.Type
}

// Plan returns the output tensors of converting in to ft, in the order
// they will be written (llama.cpp's loader order).
func Plan(in *gguf.File, ft ftype.FileType) ([]Tensor, error) {
	nLayer, err := blockCount(in)
	if err != nil {
		return nil, err
	}
	specs := make([]ftype.Tensor, len(in.Tensors))
	for i, t := range in.Tensors {
		specs[i] = ftype.Tensor{Name: t.Name, Dims: t.Dims, Type: t.Type}
	}
	types, err := ft.Plan(specs, nLayer)
	if err != nil {
		return nil, err
	}
	out := make([]Tensor, len(specs))
	for i, s := range specs {
		out[i] = Tensor{Name: s.Name, Dims: s.Dims, From: s.Type, To: types[i]}
	}
	for _, t := range out {
		if t.From != t.To && !quant.CanDequantize(t.From) {
			return nil, fmt.Errorf("tensor %s: cannot convert from %s", t.Name, t.From)
		}
		if t.From != t.To && !quant.CanQuantize(t.To) {
			return nil, fmt.Errorf("tensor %s: no quantizer for %s", t.Name, t.To)
		}
	}
	sortByLoaderOrder(out)
	return out, nil
}

func sortByLoaderOrder(ts []Tensor) {
	specs := make([]ftype.Tensor, len(ts))
	byName := make(map[string]Tensor, len(ts))
	for i, t := range ts {
		specs[i] = ftype.Tensor{Name: t.Name}
		byName[t.Name] = t
	}
	ftype.Sort(specs)
	for i, s := range specs {
		ts[i] = byName[s.Name]
	}
}

// blockCount reads <arch>.block_count; without it, it counts the blk.N
// prefixes, so files of any architecture can be converted.
func blockCount(in *gguf.File) (int, error) {
	if arch, err := in.String("general.architecture"); err == nil {
		if n, err := in.Uint32(arch + ".block_count"); err == nil {
			return int(n), nil
		}
	}
	n := 0
	for _, t := range in.Tensors {
		var l int
		if _, err := fmt.Sscanf(t.Name, "blk.%d.", &l); err == nil && l+1 > n {
			n = l + 1
		}
	}
	return n, nil
}

// Convert returns a writer holding in converted to ft: every metadata key
// of in, with general.file_type and general.quantization_version set, and
// the tensors of Plan. Writing it does the work, workers goroutines per
// tensor; progress (if not nil) is told how many output bytes were made.
// in must stay open until the writer has been written.
func Convert(in *gguf.File, ft ftype.FileType, workers int, progress func(int64)) (*gguf.Writer, int64, error) {
	plan, err := Plan(in, ft)
	if err != nil {
		return nil, 0, err
	}
	w := gguf.NewWriter()
	for _, kv := range in.KV {
		w.Set(kv.Key, kv.Value)
	}
	w.Set("general.quantization_version", gguf.U32(2))
	w.Set("general.file_type", gguf.U32(ft.ID))
	var total int64
	for _, t := range plan {
		info, _ := in.Tensor(t.Name)
		src := in.TensorData(info)
		cols := int64(t.Dims[0])
		outRow, err := quant.RowSize(t.To, cols)
		if err != nil {
			return nil, 0, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		inRow, err := quant.RowSize(t.From, cols)
		if err != nil {
			return nil, 0, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		rows := int64(len(src)) / max(inRow, 1)
		size := uint64(outRow * rows)
		total += int64(size)
		write := func(out io.Writer) error {
			if t.From == t.To {
				_, err := out.Write(src)
				if err == nil && progress != nil {
					progress(int64(len(src)))
				}
				return err
			}
			return rowstream.Write(out, int(rows), int(outRow), workers, func(dst []byte, r int) error {
				vals := make([]float32, cols)
				if err := quant.Dequantize(t.From, src[int64(r)*inRow:int64(r+1)*inRow], vals); err != nil {
					return err
				}
				return quant.Quantize(t.To, vals, dst)
			}, progress)
		}
		if err := w.AddTensorFunc(t.Name, t.To, t.Dims, size, func(out io.Writer) error {
			if err := write(out); err != nil {
				return fmt.Errorf("tensor %s: %w", t.Name, err)
			}
			return nil
		}); err != nil {
			return nil, 0, err
		}
	}
	return w, total, nil
}
