//go:build unix

package outfile

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// must stops the test at a failed setup step.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// onlyEntries fails unless dir holds exactly names (no temporary file left).
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	must(t, WriteFile(p, []byte("one")))
	must(t, os.Chmod(p, 0o600))
	must(t, WriteFile(p, []byte("two")))
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "two" {
		t.Fatalf("read %q, %v; want two", b, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the replaced file's 0600", st.Mode().Perm())
	}
	onlyEntries(t, dir, "out")
}

// refused checks that writing to p fails naming what is there, and that p
// is still what it was (want names its kind in the error).
func refused(t *testing.T, p, want string, inputs ...string) {
	t.Helper()
	before, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	err = WriteFile(p, []byte("data"), inputs...)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
		t.Fatalf("WriteFile(%s) = %v, want an error naming it and %q", p, err, want)
	}
	after, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != before.Mode() || !os.SameFile(before, after) || after.Size() != before.Size() {
		t.Errorf("%s changed: %v %d bytes -> %v %d bytes", p, before.Mode(), before.Size(), after.Mode(), after.Size())
	}
}

func TestRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ff")
	must(t, syscall.Mkfifo(p, 0o644))
	refused(t, p, "named pipe (FIFO), not a regular file")
	onlyEntries(t, dir, "ff")
}

// A character device is made on a temporary path (the same numbers as
// /dev/null), never touching a real device node; mknod needs root.
func TestRefusesCharDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a character device node (mknod) needs root; not running as root")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "mynull")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("mknod on %s: %v (the file system may forbid device nodes)", dir, err)
	}
	refused(t, p, "character device, not a regular file")
	onlyEntries(t, dir, "mynull")
}

func TestRefusesSocketAndDirectory(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer l.Close()
	refused(t, sock, "a socket, not a regular file")
	sub := filepath.Join(dir, "d")
	must(t, os.Mkdir(sub, 0o755))
	refused(t, sub, "a directory, not a regular file")
	onlyEntries(t, dir, "d", "s")
}

func TestRefusesItsInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.gguf")
	must(t, os.WriteFile(in, []byte("original"), 0o644))
	hard := filepath.Join(dir, "hard.gguf")
	must(t, os.Link(in, hard))
	sym := filepath.Join(dir, "sym.gguf")
	must(t, os.Symlink("in.gguf", sym))
	other := filepath.Join(dir, "sub", "..", "in.gguf")
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	for _, out := range []string{in, hard, sym, other} {
		refused(t, out, "is the input file", "unrelated.gguf", in)
	}
	// The input named through the symlink, the output by its own name.
	refused(t, in, "is the input file", sym)
	b, err := os.ReadFile(in)
	if err != nil || string(b) != "original" {
		t.Fatalf("input now %q, %v", b, err)
	}
	onlyEntries(t, dir, "hard.gguf", "in.gguf", "sub", "sym.gguf")
}

// Writing through a symlink replaces its target and keeps the link.
func TestWritesThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	must(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink("target", link))
	must(t, WriteFile(link, []byte("new")))
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link is gone: %v %v", st, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("target holds %q, want new", b)
	}
	dangling := filepath.Join(dir, "dangling")
	must(t, os.Symlink("nowhere/x", dangling))
	if err := WriteFile(dangling, []byte("x")); err == nil || !strings.Contains(err.Error(), "does not resolve") {
		t.Errorf("dangling symlink: %v", err)
	}
}

// The target is checked again at Commit: a FIFO that appears while the
// output is written is not replaced either.
func TestCommitChecksAgain(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("data"); err != nil {
		t.Fatal(err)
	}
	must(t, syscall.Mkfifo(p, 0o644))
	if err := f.Commit(); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("Commit = %v, want the FIFO refused", err)
	}
	f.Abort() // after a failed Commit: nothing more to do, no panic
	if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s is no longer a FIFO: %v %v", p, st, err)
	}
	onlyEntries(t, dir, "out")
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("partial")
	f.Abort()
	onlyEntries(t, dir)
}

func TestMissingDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "out")
	err := WriteFile(p, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "directory "+filepath.Dir(p)+" does not exist") {
		t.Errorf("WriteFile(%s) = %v", p, err)
	}
}
