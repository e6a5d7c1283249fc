// Package amxtest holds what the tests of the AMX code share: the
// disassembly of machine code by GNU objdump, which knows the AMX
// instructions that Go's own disassembler does not.
package amxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Objdump returns GNU objdump's x86-64 disassembly of code (flags added to
// its command line), written to a file under t's temporary directory. The
// test is skipped where objdump is not installed.
func Objdump(t testing.TB, code []byte, flags ...string) string {
	t.Helper()
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("GNU objdump not installed")
	}
	bin := filepath.Join(t.TempDir(), "code.bin")
	if err := os.WriteFile(bin, code, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-D", "-b", "binary", "-m", "i386:x86-64"}, flags...)
	out, err := exec.Command(objdump, append(args, bin)...).Output()
	if err != nil {
		var stderr []byte
		if e, ok := err.(*exec.ExitError); ok {
			stderr = e.Stderr
		}
		t.Fatalf("objdump: %v\n%s", err, stderr)
	}
	return string(out)
}
