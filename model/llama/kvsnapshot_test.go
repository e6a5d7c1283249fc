package llama

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// A context whose cache was read from a snapshot decodes the next token to
// the same logits, bit for bit, as the context that wrote it, on every
// cache type; a snapshot for another cache, a truncated one or one longer
// than the context is refused with the reason and leaves the cache empty.
func TestKVSnapshotRoundTrip(t *testing.T) {
	m, _ := openStories(t)
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(1 + 7*i%300)
	}
	for _, typ := range []quant.Type{quant.F32, quant.F16, quant.BF16} {
		t.Run(typ.String(), func(t *testing.T) {
			a := mustContext(t, m, Options{NCtx: 64, Threads: 2, KVType: typ})
			defer a.Close()
			if _, err := a.Eval(prompt, false); err != nil {
				t.Fatal(err)
			}
			var snap bytes.Buffer
			if err := a.WriteKV(&snap); err != nil {
				t.Fatal(err)
			}
			want, err := a.Eval([]int32{5}, false)
			if err != nil {
				t.Fatal(err)
			}
			want = append([]float32(nil), want...)

			b := mustContext(t, m, Options{NCtx: 64, Threads: 2, KVType: typ})
			defer b.Close()
			if err := b.ReadKV(bytes.NewReader(snap.Bytes())); err != nil {
				t.Fatal(err)
			}
			if b.Pos() != len(prompt) {
				t.Fatalf("after ReadKV the cache holds %d positions, want %d", b.Pos(), len(prompt))
			}
			got, err := b.Eval([]int32{5}, false)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("logit %d: %v after the snapshot, %v before", i, got[i], want[i])
				}
			}

			other := quant.F16
			if typ == quant.F16 {
				other = quant.F32
			}
			for _, c := range []struct {
				name string
				opts Options
				data []byte
				want string
			}{
				{"other cache type", Options{NCtx: 64, Threads: 1, KVType: other}, snap.Bytes(), "made for a " + typ.String()},
				{"too long for the context", Options{NCtx: 32, Threads: 1, KVType: typ}, snap.Bytes(), "do not fit"},
				{"truncated", Options{NCtx: 64, Threads: 1, KVType: typ}, snap.Bytes()[:snap.Len()-1], "reading 40 positions"},
				{"not a snapshot", Options{NCtx: 64, Threads: 1, KVType: typ}, bytes.Repeat([]byte("x"), 64), "bad magic"},
			} {
				d := mustContext(t, m, c.opts)
				err := d.ReadKV(bytes.NewReader(c.data))
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
				}
				if d.Pos() != 0 {
					t.Errorf("%s: a refused snapshot left %d positions", c.name, d.Pos())
				}
				d.Close()
			}
		})
	}
}
