package llama

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// A Matrix is a 2-D weight tensor as stored: Rows rows of Cols values each
// (ggml's ne1 × ne0), in Type's blocks. Data is a view into the model file.
type Matrix struct {
	Name    string
	Type    quant.Type
	Rows    int
	Cols    int
	RowSize int // bytes per row
	// Data is nil for a matrix Load placed in a weight layout alone
	// (CPULayouts), then held in placedIn's layout as placed.
	Data     []byte
	placedIn *ledger.WeightLayout
	placed   []byte
}

// Row returns the bytes of row r.
func (m *Matrix) Row(r int) []byte { return m.Data[r*m.RowSize : (r+1)*m.RowSize] }

// DequantizeRow expands row r into dst (Cols values).
func (m *Matrix) DequantizeRow(dst []float32, r int) error {
	if m.Data == nil && m.placedIn != nil {
		if r < 0 || r >= m.Rows {
			return fmt.Errorf("%s row %d: out of %d rows", m.Name, r, m.Rows)
		}
		m.placedIn.DequantizeRow(dst[:m.Cols], m.placed, r, m.Cols)
		return nil
	}
	if err := quant.Dequantize(m.Type, m.Row(r), dst[:m.Cols]); err != nil {
		return fmt.Errorf("%s row %d: %w", m.Name, r, err)
	}
	return nil
}

// Layer holds one transformer block's weights.
type Layer struct {
	AttnNorm []float32
	Q, K, V  Matrix
	Out      Matrix
	FFNNorm  []float32
	Gate, Up Matrix
	Down     Matrix
}

// Model is a loaded Llama: its configuration and weights. The weights are
// views into the GGUF file, which must stay open while the Model is used.
type Model struct {
	Config Config
	Embed  Matrix // token_embd: Vocab rows of Dim
	Layers []Layer
	Norm   []float32 // output_norm
	Output Matrix    // output head: Vocab rows of Dim; Embed itself when tied
	Tied   bool      // the file has no output.weight and reuses token_embd
	// FreqFactors are Llama 3.1's rope_freqs (HeadDim/2 values dividing the
	// rotation frequencies), nil when absent.
	FreqFactors []float32
	// layouts: the matrices repacked for kernels that read a weight layout.
	layouts layoutCache
}

// FromGGUF reads the configuration and the weights of a llama-architecture
// GGUF file. The Model keeps views into f.
func FromGGUF(f *gguf.File) (*Model, error) {
	cfg, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	l := loader{f: f}
	m := &Model{Config: cfg}
	m.Embed = l.matrix("token_embd.weight", cfg.Dim, -1)
	if l.err != nil {
		return nil, l.err
	}
	m.Config.Vocab = m.Embed.Rows
	if m.Config.Vocab == 0 {
		return nil, fmt.Errorf("tensor token_embd.weight has no rows: the vocabulary is empty")
	}
	cfg = m.Config
	m.Norm = l.vector("output_norm.weight", cfg.Dim)
	if _, ok := f.Tensor("output.weight"); ok {
		m.Output = l.matrix("output.weight", cfg.Dim, cfg.Vocab)
	} else {
		m.Output, m.Tied = m.Embed, true
	}
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		m.FreqFactors = l.vector("rope_freqs.weight", cfg.HeadDim/2)
	}
	// Before allocating by block_count: the blocks must be in the file.
	if n := blocksInFile(f); cfg.Layers > n {
		held := "no block's tensors"
		if n > 0 {
			held = fmt.Sprintf("the tensors of %d blocks (blk.0 to blk.%d)", n, n-1)
		}
		return nil, fmt.Errorf("llama.block_count is %d but the file holds %s: the metadata or the file is damaged", cfg.Layers, held)
	}
	m.Layers = make([]Layer, cfg.Layers)
	for i := range m.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		for _, unsupported := range []string{"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias", "ffn_gate_inp.weight"} {
			if _, ok := f.Tensor(p + unsupported); ok {
				return nil, fmt.Errorf("tensor %s%s: attention biases and mixtures of experts are not supported", p, unsupported)
			}
		}
		m.Layers[i] = Layer{
			AttnNorm: l.vector(p+"attn_norm.weight", cfg.Dim),
			Q:        l.matrix(p+"attn_q.weight", cfg.Dim, cfg.QDim()),
			K:        l.matrix(p+"attn_k.weight", cfg.Dim, cfg.KVDim()),
			V:        l.matrix(p+"attn_v.weight", cfg.Dim, cfg.KVDim()),
			Out:      l.matrix(p+"attn_output.weight", cfg.QDim(), cfg.Dim),
			FFNNorm:  l.vector(p+"ffn_norm.weight", cfg.Dim),
			Gate:     l.matrix(p+"ffn_gate.weight", cfg.Dim, cfg.FFNDim),
			Up:       l.matrix(p+"ffn_up.weight", cfg.Dim, cfg.FFNDim),
			Down:     l.matrix(p+"ffn_down.weight", cfg.FFNDim, cfg.Dim),
		}
	}
	if l.err != nil {
		return nil, l.err
	}
	return m, nil
}

// blocksInFile is the number of consecutive blocks blk.0, blk.1, … whose
// attention norm is in f's tensor directory.
func blocksInFile(f *gguf.File) int {
	n := 0
	for {
		if _, ok := f.Tensor(fmt.Sprintf("blk.%d.attn_norm.weight", n)); !ok {
			return n
		}
		n++
	}
}

// loader reads tensors, keeping the first error.
type loader struct {
	f   *gguf.File
	err error
}

func (l *loader) tensor(name string) *gguf.TensorInfo {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	return t
}

// matrix loads a cols×rows tensor (ggml dims [cols, rows]); rows < 0 accepts any.
func (l *loader) matrix(name string, cols, rows int) Matrix {
	t := l.tensor(name)
	if t == nil {
		return Matrix{}
	}
	if len(t.Dims) != 2 || int(t.Dims[0]) != cols || (rows >= 0 && int(t.Dims[1]) != rows) {
		l.err = fmt.Errorf("tensor %s has dims %v, want [%d %d]", name, t.Dims, cols, rows)
		return Matrix{}
	}
	if !quant.CanDequantize(t.Type) {
		l.err = fmt.Errorf("tensor %s has type %s, which cannot be dequantized", name, t.Type)
		return Matrix{}
	}
	rs, err := quant.RowSize(t.Type, int64(cols))
	if err != nil {
		l.err = fmt.Errorf("tensor %s: %w", name, err)
		return Matrix{}
	}
	data := l.f.TensorData(t)
	r := int(t.Dims[1])
	if int64(len(data)) != rs*int64(r) {
		l.err = fmt.Errorf("tensor %s holds %d bytes, want %d", name, len(data), rs*int64(r))
		return Matrix{}
	}
	return Matrix{Name: name, Type: t.Type, Rows: r, Cols: cols, RowSize: int(rs), Data: data}
}

// vector loads a 1-D F32 tensor of n values, copied out of the file.
func (l *loader) vector(name string, n int) []float32 {
	t := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Dims) != 1 || int(t.Dims[0]) != n {
		l.err = fmt.Errorf("tensor %s has dims %v, want [%d]", name, t.Dims, n)
		return nil
	}
	if t.Type != quant.F32 {
		l.err = fmt.Errorf("tensor %s has type %s, want F32", name, t.Type)
		return nil
	}
	data := l.f.TensorData(t)
	if len(data) != 4*n {
		l.err = fmt.Errorf("tensor %s holds %d bytes, want %d", name, len(data), 4*n)
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return v
}
