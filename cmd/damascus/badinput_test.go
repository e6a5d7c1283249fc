//go:build unix

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/internal/testmodel"
)

// Bad input (issue 22): nothing lost, nothing panics. Each test is one
// reproduction of the adversarial sweep, on scratch paths only.

// fails runs the command line and checks a non-zero exit with an error line
// containing each of want; it returns stderr.
func fails(t *testing.T, args []string, want ...string) string {
	t.Helper()
	code, _, stderr := runCLI(args...)
	if code == 0 {
		t.Fatalf("%v: exit 0, want a failure naming %q", args, want)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
		}
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("%v panicked:\n%s", args, stderr)
	}
	return stderr
}

// unchanged fails unless path still has the mode type and size of before.
func unchanged(t *testing.T, path string, before os.FileInfo) {
	t.Helper()
	after, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if after.Mode().Type() != before.Mode().Type() || after.Size() != before.Size() || !os.SameFile(before, after) {
		t.Errorf("%s was replaced: %v %d bytes, now %v %d bytes", path, before.Mode(), before.Size(), after.Mode(), after.Size())
	}
}

// scratchFIFO makes a named pipe called name in dir and returns its path.
func scratchFIFO(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// chatFails runs chat with args on stdin and checks that it fails with an
// error containing want.
func chatFails(t *testing.T, args []string, stdin string, want string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := runChat(args, strings.NewReader(stdin), &stdout, &stderr); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("chat %v: %v, want %q", args, err, want)
	}
}

func TestQuantizeRefusesFIFOAndDevice(t *testing.T) {
	in := testmodel.WriteTemp(t, testmodel.Options{})
	dir := t.TempDir()
	ff := scratchFIFO(t, dir, "ff")
	st, _ := os.Lstat(ff)
	fails(t, []string{"quantize", in, ff, "--type", "F16", "--quiet"}, "output "+ff+" is a named pipe (FIFO), not a regular file")
	unchanged(t, ff, st)

	if os.Geteuid() != 0 {
		t.Skip("the character-device half needs root (mknod); not running as root")
	}
	null := filepath.Join(dir, "mynull") // /dev/null's numbers, on a scratch path
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	st, _ = os.Lstat(null)
	fails(t, []string{"quantize", in, null, "--type", "F16", "--quiet"}, "output "+null+" is a character device, not a regular file")
	unchanged(t, null, st)
}

func TestSynthRefusesFIFO(t *testing.T) {
	ff := scratchFIFO(t, t.TempDir(), "ff")
	st, _ := os.Lstat(ff)
	// Refused before the tokenizer is looked for: no shared data needed.
	fails(t, []string{"synth", "--preset", "tiny", "--type", "Q8_0", "--quiet", "-o", ff}, "is a named pipe (FIFO), not a regular file")
	unchanged(t, ff, st)
}

// quantize x.gguf x.gguf (or through a hard link or symlink) would replace
// the input; it is refused and the input kept byte for byte.
func TestQuantizeRefusesInPlace(t *testing.T) {
	in := testmodel.WriteTemp(t, testmodel.Options{})
	orig, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(in)
	hard, sym := filepath.Join(dir, "hard.gguf"), filepath.Join(dir, "sym.gguf")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(in), sym); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, hard, sym, filepath.Join(dir, ".", filepath.Base(in))} {
		fails(t, []string{"quantize", in, out, "--type", "Q8_0", "--quiet"}, "is the input file", "write to another path")
	}
	// The input named by the symlink, the output by the file's own name.
	fails(t, []string{"quantize", sym, in, "--type", "Q8_0", "--quiet"}, "is the input file")
	if got, _ := os.ReadFile(in); !bytes.Equal(got, orig) {
		t.Fatal("the input file changed")
	}
	// A different output path still works.
	out := filepath.Join(dir, "q8.gguf")
	if code, _, stderr := runCLI("quantize", in, out, "--type", "F16", "--quiet"); code != 0 {
		t.Fatalf("quantize to a new path: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(in); !bytes.Equal(got, orig) {
		t.Fatal("the input file changed")
	}
}

// A FIFO as the model fails at once instead of blocking (issue 22 item 7).
func TestModelFIFORefused(t *testing.T) {
	ff := scratchFIFO(t, t.TempDir(), "f")
	for _, args := range [][]string{{"info", ff}, {"generate", "-m", ff, "-n", "1"}} {
		done := make(chan string, 1)
		go func() {
			code, _, stderr := runCLI(args...)
			done <- fmt.Sprintf("exit %d: %s", code, stderr)
		}()
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "exit 1: ") || !strings.Contains(got, ff+": not a regular file (a named pipe)") {
				t.Errorf("%v: %s", args, got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: still blocked on the FIFO after 20s", args)
		}
	}
}

// One NaN in a weight: every command that runs the model fails with one
// line naming the problem instead of panicking (generate) or printing NaN
// and exiting 0 (predict, perplexity).
func TestNaNWeightsFailClearly(t *testing.T) {
	model := testmodel.WriteTemp(t, testmodel.Options{NaNIn: "blk.0.attn_q.weight"})
	const want = "are not finite (NaN): the model's weights may be damaged"
	text := scratchText(t, strings.Repeat("once on the hat, the ant ate an onion. ", 8))
	for _, args := range [][]string{
		{"generate", "-m", model, "-p", "once", "-n", "4"},
		{"generate", "-m", model, "-p", "once", "-n", "4", "--temp", "0"},
		{"generate", "-m", model, "-p", "once", "-n", "4", "--llama2c", "--top-p", "0.9"},
		{"predict", "-m", model, "once on the"},
		{"perplexity", "-m", model, "--file", text, "--ctx-size", "16"},
	} {
		stderr := fails(t, args, "logits at position", want)
		if lines := strings.Count(stderr, "damascus "+args[0]+":"); lines != 1 {
			t.Errorf("%v: %d error lines, want 1:\n%s", args, lines, stderr)
		}
	}
	chatFails(t, []string{"-m", model, "--chat-format", "chatml", "-n", "4"}, "hello\n", want)
}

// The sweep's own reproduction: stories260K with one float at byte 145248
// made NaN, on a copy; generate with the default sampler used to panic in
// sample.softmax.
func TestStories260KNaNWeight(t *testing.T) {
	data := testdata.Stories260KGGUF.Read(t)
	binary.LittleEndian.PutUint32(data[145248:], 0x7fc00000)
	model := filepath.Join(t.TempDir(), "nan.gguf")
	if err := os.WriteFile(model, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, []string{"generate", "-m", model, "-p", "Once upon a time", "-n", "8"}, "are not finite (NaN)")
	fails(t, []string{"predict", "-m", model, "Once upon a time"}, "are not finite (NaN)")
}

// Every numeric option is checked when parsed: NaN (which passed the range
// checks and made min-p panic), out-of-range counts and absurd thread
// counts fail with the flag named, before the model is loaded.
func TestNumericFlagsRefused(t *testing.T) {
	model := testmodel.WriteTemp(t, testmodel.Options{})
	text := scratchText(t, strings.Repeat("once on the hat. ", 20))
	for _, c := range []struct{ flag, value, want string }{
		{"--min-p", "nan", "not a finite number"},
		{"--temp", "nan", "not a finite number"},
		{"--temp", "-1", "outside the range [0, ∞)"},
		{"--top-p", "nan", "not a finite number"},
		{"--top-p", "1.5", "outside the range [0, 1]"},
		{"--repeat-penalty", "nan", "not a finite number"},
		{"--presence-penalty", "nan", "not a finite number"},
		{"--frequency-penalty", "inf", "not a finite number"},
		{"--top-k", "-3", "outside the range [0, ∞)"},
		{"--repeat-last-n", "-2", "outside the range [-1, ∞)"},
		{"--batch-size", "-1", "outside the range [0, "},
		{"--threads", "-1", "outside the range [0, "},
		{"--threads", "10000", "10000 threads is more than"},
		{"--ctx-size", "-1", "outside the range [0, "},
		{"-n", "0", "outside the range [1, ∞)"},
	} {
		args := []string{"generate", "-m", model, "-p", "once", "-n", "2", c.flag, c.value}
		fails(t, args, `invalid value "`+c.value+`" for flag -`+strings.TrimLeft(c.flag, "-"), c.want)
	}
	for _, args := range [][]string{
		{"predict", "-m", model, "--threads", "10000", "once"},
		{"predict", "-m", model, "-k", "0", "once"},
		{"perplexity", "-m", model, "--file", text, "--batch-size", "-1"},
		{"perplexity", "-m", model, "--file", text, "--ctx-size", "-1"},
		{"quantize", model, filepath.Join(t.TempDir(), "o.gguf"), "--threads", "10000"},
	} {
		fails(t, args, "invalid value")
	}
	chatFails(t, []string{"-m", model, "--min-p", "nan"}, "", "not a finite number")
	// In range still works, the edges included.
	if code, _, stderr := runCLI("generate", "-m", model, "-p", "once", "-n", "3", "--min-p", "1", "--top-p", "0",
		"--temp", "0.5", "--repeat-penalty", "1.1", "--presence-penalty", "-0.5", "--threads", "1", "--batch-size", "1"); code != 0 {
		t.Errorf("valid flags: exit %d: %s", code, stderr)
	}
}

// Absurd counts never reach the allocator (the model loader checks them
// against the tensor directory): block_count 2^32-1 ended in "fatal error:
// out of memory".
func TestAbsurdBlockCount(t *testing.T) {
	for _, n := range []uint32{5_000_000, math.MaxUint32} {
		model := testmodel.WriteTemp(t, testmodel.Options{Set: map[string]gguf.Value{"llama.block_count": gguf.U32(n)}})
		fails(t, []string{"generate", "-m", model, "-p", "once", "-n", "2"},
			fmt.Sprintf("llama.block_count is %d but the file holds the tensors of 2 blocks", n))
	}
}

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Lost output is a failure: predict and perplexity exited 0 with their
// stdout on a full device.
func TestFullStdoutFails(t *testing.T) {
	model := testmodel.WriteTemp(t, testmodel.Options{})
	text := scratchText(t, strings.Repeat("once on the hat. ", 20))
	cmds := [][]string{
		{"predict", "-m", model, "once on the"},
		{"perplexity", "-m", model, "--file", text, "--ctx-size", "16"},
		{"generate", "-m", model, "-p", "once", "-n", "4"},
		{"tokenize", "-m", model, "once on the"},
		{"info", model},
	}
	stdouts := map[string]func() (io.Writer, func()){
		"ENOSPC writer": func() (io.Writer, func()) { return fullWriter{}, func() {} },
	}
	if os.Geteuid() == 0 {
		// /dev/full's numbers on a scratch path: writes fail with ENOSPC.
		full := filepath.Join(t.TempDir(), "full")
		if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 7))); err == nil {
			stdouts["scratch full device"] = func() (io.Writer, func()) {
				f, err := os.OpenFile(full, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				return f, func() { f.Close() }
			}
		}
	}
	for name, open := range stdouts {
		for _, args := range cmds {
			w, done := open()
			var stderr bytes.Buffer
			code := run(args, w, &stderr)
			done()
			if code != 1 || !strings.Contains(stderr.String(), "no space left on device") {
				t.Errorf("%s, %v: exit %d, stderr:\n%s", name, args, code, stderr.String())
			}
		}
	}
}

// A chat line over the limit gets an error naming it, not
// "bufio.Scanner: token too long".
func TestChatLongLine(t *testing.T) {
	model := testmodel.WriteTemp(t, testmodel.Options{})
	chatFails(t, []string{"-m", model, "--chat-format", "chatml", "-n", "2"}, strings.Repeat("a", 2<<20)+"\n",
		"a message line is longer than 1 MiB, the most chat takes")
}

// A model whose weights are of a type without kernels here (Q5_0: a
// llama.cpp file type, not one of the catalogue's) is refused at load with
// the tensor and the type named and the types that run listed, not with an
// internal "unknown op".
func TestUnsupportedWeightTypeNamed(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny-q5_0.gguf")
	code, _, stderr := runCLI("synth", "--preset", "tiny", "--type", "Q5_0", "--quiet", "-o", model)
	if code != 0 {
		t.Fatalf("synth Q5_0: exit %d:\n%s", code, stderr)
	}
	stderr = fails(t, []string{"generate", "-m", model, "-p", "once", "-n", "4"},
		"Q5_0 weights are not supported", "Q4_K, Q5_K, Q6_K", "damascus quantize")
	if strings.Contains(stderr, "unknown op") {
		t.Errorf("the internal op name leaks into the error:\n%s", stderr)
	}
}
