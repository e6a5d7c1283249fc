//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/internal/testdata"
)

// TestMutationSweep is the adversarial sweep of issue 22, run on demand
// (DAMASCUS_SWEEP=N, N mutations of each kind per model; it takes minutes):
// stories260K and the synthetic tiny model, truncated, bit-flipped and with
// counts, lengths, dims, types and offsets of the header inflated, each run
// through `damascus info` and `damascus generate` in a fresh process with a
// timeout. A run may succeed or fail with one error line; it fails the test
// if it panics, dies of a signal, hangs or exceeds the memory bound.
// DAMASCUS_SWEEP_OUT=FILE writes the counts as Markdown.
func TestMutationSweep(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DAMASCUS_SWEEP"))
	if n <= 0 {
		t.Skip("the mutation sweep runs with DAMASCUS_SWEEP=N (mutations of each kind per model; minutes)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "damascus")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	models := map[string]string{"stories260K": testdata.Stories260KGGUF.Require(t)}
	tiny := filepath.Join(dir, "tiny.gguf")
	var out, errOut bytes.Buffer
	if err := runSynth([]string{"--preset", "tiny", "--type", "Q4_K_M", "--quiet", "-o", tiny}, &out, &errOut); err != nil {
		t.Fatalf("synth: %v\n%s", err, errOut.String())
	}
	models["synth tiny Q4_K_M"] = tiny

	var report strings.Builder
	fmt.Fprintf(&report, "| model | mutation | files | runs | exit 0 | clean error | panic | signal | hang | max RSS |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	names := []string{"stories260K", "synth tiny Q4_K_M"}
	for _, name := range names {
		orig, err := os.ReadFile(models[name])
		if err != nil {
			t.Fatal(err)
		}
		s := &sweep{t: t, bin: bin, path: filepath.Join(dir, "mut.gguf"), orig: orig, rng: rand.New(rand.NewPCG(22, uint64(len(orig))))}
		for _, kind := range []string{"truncate", "bit flip", "inflate"} {
			st := s.run(kind, n)
			fmt.Fprintf(&report, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %.0f MiB |\n", name, kind,
				st.files, st.runs, st.ok, st.clean, st.panics, st.signals, st.hangs, float64(st.maxRSS)/(1<<20))
		}
	}
	type class struct {
		text string
		n    int
	}
	var cs []class
	for k, v := range errClasses {
		cs = append(cs, class{k, v})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].n > cs[j].n || cs[i].n == cs[j].n && cs[i].text < cs[j].text })
	fmt.Fprintf(&report, "\n%d distinct error lines (numbers as N); the most frequent:\n\n", len(cs))
	for _, c := range cs[:min(len(cs), 15)] {
		fmt.Fprintf(&report, "- %d× `%s`\n", c.n, c.text)
	}
	t.Log("\n" + report.String())
	if testing.Verbose() {
		var all strings.Builder
		for _, c := range cs {
			fmt.Fprintf(&all, "%5d %s\n", c.n, c.text)
		}
		t.Log("every error line:\n" + all.String())
	}
	if p := os.Getenv("DAMASCUS_SWEEP_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type sweep struct {
	t    *testing.T
	bin  string
	path string // the mutated copy
	orig []byte
	rng  *rand.Rand
}

type sweepStats struct {
	files, runs, ok, clean, panics, signals, hangs int
	maxRSS                                         int64
}

// errClasses counts the clean errors by their text, numbers and the path
// left out, to read what the sweep's users would see.
var errClasses = map[string]int{}

var digits = strings.NewReplacer("0", "N", "1", "N", "2", "N", "3", "N", "4", "N", "5", "N", "6", "N", "7", "N", "8", "N", "9", "N")

func classify(msg, path string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	last := strings.ReplaceAll(lines[len(lines)-1], path, "FILE")
	last = digits.Replace(last)
	for strings.Contains(last, "NN") {
		last = strings.ReplaceAll(last, "NN", "N")
	}
	if len(last) > 150 {
		last = last[:150] + "…"
	}
	return last
}

// maxSweepRSS bounds one run's memory: the models are 1 and 35 MB.
const maxSweepRSS = 1 << 30

func (s *sweep) run(kind string, n int) sweepStats {
	var st sweepStats
	try := func(desc string) {
		st.files++
		for _, args := range [][]string{{"info", s.path}, {"generate", "-m", s.path, "-p", "Once upon a time", "-n", "2", "--temp", "0", "--threads", "1"}} {
			st.runs++
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, s.bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
			cancel()
			if ps := cmd.ProcessState; ps != nil {
				if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
					st.maxRSS = max(st.maxRSS, ru.Maxrss<<10)
					if ru.Maxrss<<10 > maxSweepRSS {
						s.t.Errorf("%s, %s: %d MiB resident", desc, args[0], ru.Maxrss>>10)
					}
				}
			}
			msg := stderr.String()
			var ee *exec.ExitError
			switch {
			case timedOut:
				st.hangs++
				s.t.Errorf("%s, %s: still running after 30s", desc, args[0])
			case strings.Contains(msg, "panic:") || strings.Contains(msg, "fatal error:") || strings.Contains(msg, "goroutine "):
				st.panics++
				s.t.Errorf("%s, %s panicked:\n%s", desc, args[0], msg)
			case err == nil:
				st.ok++
			case errors.As(err, &ee) && ee.ExitCode() == 1:
				st.clean++
				errClasses[classify(msg, s.path)]++
			case errors.As(err, &ee) && ee.ExitCode() < 0:
				st.signals++
				s.t.Errorf("%s, %s: %v\n%s", desc, args[0], err, msg)
			default:
				s.t.Errorf("%s, %s: %v\n%s", desc, args[0], err, msg)
			}
		}
	}
	write := func(b []byte) {
		if err := os.WriteFile(s.path, b, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	switch kind {
	case "truncate":
		// Lengths from long to short, the header dense: the copy is cut in
		// place each time.
		hdr := headerEnd(s.orig)
		lens := map[int]bool{0: true, 3: true, 4: true, 8: true, 23: true, 24: true, hdr - 1: true, len(s.orig) - 1: true}
		for len(lens) < n {
			if s.rng.IntN(4) == 0 {
				lens[s.rng.IntN(len(s.orig))] = true
			} else {
				lens[s.rng.IntN(hdr)] = true
			}
		}
		var order []int
		for l := range lens {
			order = append(order, l)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(order)))
		write(s.orig)
		for _, l := range order {
			if err := os.Truncate(s.path, int64(l)); err != nil {
				s.t.Fatal(err)
			}
			try(fmt.Sprintf("truncated to %d", l))
		}
	case "bit flip":
		// Three in four in the header and metadata, the rest in tensor data;
		// each flip undone after its runs.
		write(s.orig)
		hdr := headerEnd(s.orig)
		for range n {
			off := s.rng.IntN(hdr)
			if s.rng.IntN(4) == 0 {
				off = s.rng.IntN(len(s.orig))
			}
			bit := byte(1) << s.rng.IntN(8)
			s.patch(off, []byte{s.orig[off] ^ bit})
			try(fmt.Sprintf("bit %d of byte %d flipped", bit, off))
			s.patch(off, s.orig[off:off+1])
		}
	case "inflate":
		write(s.orig)
		fields := ggufFields(s.orig)
		for range n {
			f := fields[s.rng.IntN(len(fields))]
			old := readUint(s.orig[f.off:], f.size)
			vals := []uint64{0, 1, old + 1, old * 1000, old << 16, math.MaxUint32, 5_000_000}
			if f.size == 8 {
				vals = append(vals, math.MaxInt64, math.MaxUint64, 1<<40)
			}
			v := vals[s.rng.IntN(len(vals))]
			b := make([]byte, f.size)
			putUint(b, f.size, v)
			s.patch(f.off, b)
			try(fmt.Sprintf("%s at %d set to %d (was %d)", f.what, f.off, v, old))
			s.patch(f.off, s.orig[f.off:f.off+f.size])
		}
	}
	return st
}

func (s *sweep) patch(off int, b []byte) {
	f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, int64(off)); err != nil {
		s.t.Fatal(err)
	}
}

// A ggufField is a count, length, dim, type tag or offset of the header.
type ggufField struct {
	off, size int
	what      string
}

// ggufFields walks a valid GGUF v3 header and returns its count-like
// fields (array elements: the first few of each array only).
func ggufFields(b []byte) []ggufField {
	var fs []ggufField
	p := 0
	u32 := func() uint64 { v := uint64(binary.LittleEndian.Uint32(b[p:])); p += 4; return v }
	u64 := func() uint64 { v := binary.LittleEndian.Uint64(b[p:]); p += 8; return v }
	field := func(size int, what string) { fs = append(fs, ggufField{p, size, what}) }
	str := func(what string) {
		field(8, what+" length")
		p += int(u64())
	}
	sizes := map[uint64]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	var value func(typ uint64, what string, top bool)
	value = func(typ uint64, what string, top bool) {
		switch typ {
		case 8:
			str(what)
		case 9:
			field(4, what+" element type")
			et := u32()
			field(8, what+" array count")
			cnt := int(u64())
			for i := range cnt {
				if i < 3 {
					value(et, fmt.Sprintf("%s[%d]", what, i), false)
				} else if sz, ok := sizes[et]; ok {
					p += sz * (cnt - i)
					break
				} else {
					value(et, what, false)
					fs = fs[:len(fs)-1] // keep the first elements' fields only
				}
			}
		default:
			if sz := sizes[typ]; top && (sz == 4 || sz == 8) {
				field(sz, what+" value")
			}
			p += sizes[typ]
		}
	}
	p = 8
	field(8, "tensor count")
	nt := int(u64())
	field(8, "kv count")
	nkv := int(u64())
	for range nkv {
		kp := p + 8
		klen := int(binary.LittleEndian.Uint64(b[p:]))
		key := string(b[kp : kp+klen])
		str("key " + key)
		field(4, key+" type")
		value(u32(), key, true)
	}
	for range nt {
		np := p + 8
		name := string(b[np : np+int(binary.LittleEndian.Uint64(b[p:]))])
		str("tensor " + name + " name")
		field(4, name+" n_dims")
		nd := int(u32())
		for i := range nd {
			field(8, fmt.Sprintf("%s dim %d", name, i))
			p += 8
		}
		field(4, name+" type")
		p += 4
		field(8, name+" offset")
		p += 8
	}
	return fs
}

// headerEnd is where the tensor directory of a valid GGUF ends.
func headerEnd(b []byte) int {
	fs := ggufFields(b)
	last := fs[len(fs)-1]
	return last.off + last.size
}

func readUint(b []byte, size int) uint64 {
	if size == 4 {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func putUint(b []byte, size int, v uint64) {
	if size == 4 {
		binary.LittleEndian.PutUint32(b, uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(b, v)
}
