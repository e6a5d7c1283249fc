package gguf_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
)

// errInvariant marks a parse that succeeded or failed in a way it must not.
var errInvariant = errors.New("invariant broken")

// rewriter returns a Writer holding f's metadata and tensors, in order.
func rewriter(f *gguf.File) (*gguf.Writer, error) {
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		w.Set(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if err := w.AddTensor(t.Name, t.Type, t.Dims, f.TensorData(t)); err != nil {
			return nil, fmt.Errorf("parsed tensor %q refused by the writer: %v", t.Name, err)
		}
	}
	return w, nil
}

// checkParse parses data and checks what any input must satisfy: a failure
// is a one-line *FormatError with an offset inside the input; a success
// survives a rewrite through the Writer unchanged. It returns the parse
// error, or an error wrapping errInvariant.
func checkParse(data []byte) error {
	f, err := gguf.Parse(data)
	if err != nil {
		var fe *gguf.FormatError
		if !errors.As(err, &fe) {
			return fmt.Errorf("%w: error %T is not a *FormatError: %v", errInvariant, err, err)
		}
		if fe.Offset < 0 || fe.Offset > int64(len(data)) || strings.Contains(err.Error(), "\n") {
			return fmt.Errorf("%w: bad error for %d bytes: %q", errInvariant, len(data), err)
		}
		return err
	}
	w, err := rewriter(f)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvariant, err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return fmt.Errorf("%w: parsed file refused by the writer: %v", errInvariant, err)
	}
	g, err := gguf.Parse(buf.Bytes())
	if err != nil {
		return fmt.Errorf("%w: rewritten file does not parse: %v", errInvariant, err)
	}
	if len(g.KV) != len(f.KV) || len(g.Tensors) != len(f.Tensors) || g.Alignment != f.Alignment {
		return fmt.Errorf("%w: rewrite changed the counts or alignment", errInvariant)
	}
	for i, kv := range f.KV {
		if g.KV[i].Key != kv.Key || !g.KV[i].Value.Equal(kv.Value) {
			return fmt.Errorf("%w: rewrite changed key %q", errInvariant, kv.Key)
		}
	}
	for i := range f.Tensors {
		a, b := &f.Tensors[i], &g.Tensors[i]
		if a.Name != b.Name || a.Type != b.Type || a.Size != b.Size || !slices.Equal(a.Dims, b.Dims) ||
			!bytes.Equal(f.TensorData(a), g.TensorData(b)) {
			return fmt.Errorf("%w: rewrite changed tensor %q", errInvariant, a.Name)
		}
	}
	return nil
}

// Parse may allocate at most allocPerByte bytes per input byte, plus
// allocSlack: validation before allocation makes memory proportional to the
// file, however its counts lie.
const (
	allocPerByte = 24
	allocSlack   = 64 << 10
)

// parseAllocBytes returns the heap bytes allocated while parsing data (by
// the whole process, which is quiet otherwise). runtime/metrics is read
// without stopping the world, which keeps the fuzzer fast.
func parseAllocBytes(data []byte) uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	gguf.Parse(data)
	metrics.Read(sample)
	return sample[0].Value.Uint64() - before
}

// minParseAllocBytes measures until a measurement is within the bound, at
// most three times: the fuzzing engine's own goroutines allocate now and
// then, and the heap counter moves a span at a time.
func minParseAllocBytes(data []byte) uint64 {
	limit := uint64(allocPerByte*len(data) + allocSlack)
	least := uint64(math.MaxUint64)
	for range 3 {
		least = min(least, parseAllocBytes(data))
		if least <= limit {
			break
		}
	}
	return least
}

func FuzzParse(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	seeds := [][]byte{
		smallFile(f),
		buildFile(f, everyValue()[:5], nil, 0),
		buildFile(f, nil, everyTensor(rng)[:3], 32),
	}
	for _, s := range seeds {
		f.Add(s)
		for range 8 {
			n := rng.IntN(len(s))
			f.Add(s[:n])
			flipped := slices.Clone(s)
			flipped[rng.IntN(len(s))] ^= 1 << rng.IntN(8)
			f.Add(flipped)
		}
	}
	// Every malformed case, and a valid file with the rarer shapes (version
	// 2, a scalar, an empty tensor), give the mutator every path to start from.
	for _, c := range badFiles() {
		f.Add(c.data)
	}
	f.Add(edgeCaseFile())
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := checkParse(data); errors.Is(err, errInvariant) {
			t.Fatal(err)
		}
		if got, limit := minParseAllocBytes(data), uint64(allocPerByte*len(data)+allocSlack); got > limit {
			t.Fatalf("parsing %d bytes allocated %d bytes, more than %d", len(data), got, limit)
		}
	})
}

// TestAllocationBound checks the bound on inputs built to inflate memory:
// many tiny keys, deeply nested empty arrays, many small strings.
func TestAllocationBound(t *testing.T) {
	var inputs [][]byte
	r := header(0, 5000)
	for i := range 5000 {
		r.str(fmt.Sprint(i)).u32(0).u8(0)
	}
	inputs = append(inputs, r.b)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeArray)).u64(5000)
	for range 5000 {
		r.u32(uint32(gguf.TypeUint8)).u64(0)
	}
	inputs = append(inputs, r.b)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeString)).u64(10000)
	for range 10000 {
		r.str("")
	}
	inputs = append(inputs, r.b)
	r = header(3000, 0)
	for i := range 3000 {
		r.tensor(fmt.Sprint(i), 0, 0, 0, 0, 0, 0)
	}
	inputs = append(inputs, r.pad(32).b)
	for i, in := range inputs {
		if _, err := gguf.Parse(in); err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		got := minParseAllocBytes(in)
		t.Logf("input %d: %d bytes → %d bytes allocated (%.1f per byte)", i, len(in), got, float64(got)/float64(len(in)))
		if limit := uint64(allocPerByte*len(in) + allocSlack); got > limit {
			t.Errorf("input %d: %d bytes allocated, more than %d", i, got, limit)
		}
	}
}
