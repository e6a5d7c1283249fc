package hugemem

import (
	"runtime"
	"testing"
)

func TestAllocAlignedWritableAndFreed(t *testing.T) {
	for _, n := range []int{1, 4095, HugePageSize, 3*HugePageSize + 17} {
		r, err := Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		b := r.Bytes()
		if len(b) != n {
			t.Fatalf("Alloc(%d): len %d", n, len(b))
		}
		if runtime.GOOS == "linux" && addrOf(b)%HugePageSize != 0 {
			t.Errorf("Alloc(%d): address %#x not 2 MiB aligned", n, addrOf(b))
		}
		b[n-1] = 2
		b[0] = 1
		if b[0] != 1 || (n > 1 && b[n-1] != 2) {
			t.Fatalf("Alloc(%d): memory not writable", n)
		}
		if err := r.Free(); err != nil {
			t.Fatalf("Free: %v", err)
		}
		if r.Bytes() != nil {
			t.Fatal("Bytes after Free is not nil")
		}
	}
	if _, err := Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
}

// In the "madvise" and "always" modes an advised, touched region should be
// backed by huge pages; the kernel may still refuse under memory pressure, so
// the test only requires the smaps entry to be found and consistent.
func TestHugeBytesReadsSmaps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("smaps is linux only")
	}
	r, err := Alloc(8 * HugePageSize)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	b := r.Bytes()
	for i := 0; i < len(b); i += 4096 {
		b[i] = byte(i)
	}
	got, err := HugeBytes(r)
	if err != nil {
		t.Fatal(err)
	}
	if got < 0 || got > int64(len(b)) {
		t.Fatalf("HugeBytes = %d, outside [0, %d]", got, len(b))
	}
	mode := THPMode()
	t.Logf("THP mode %s, advised %v, %d of %d bytes on huge pages", mode, r.Advised(), got, len(b))
	if (mode == "madvise" || mode == "always") && r.Advised() && got == 0 {
		t.Logf("kernel gave no huge pages despite the advice (memory fragmented?)")
	}
}

func TestTHPModeParses(t *testing.T) {
	switch m := THPMode(); m {
	case "always", "madvise", "never", "unavailable":
	default:
		t.Errorf("THPMode() = %q", m)
	}
}

func TestUnavailableAgreesWithTHPMode(t *testing.T) {
	why := Unavailable()
	mode := THPMode()
	t.Logf("THP mode %s; unavailable: %q", mode, why)
	usable := runtime.GOOS == "linux" && (mode == "always" || mode == "madvise")
	if usable != (why == "") {
		t.Errorf("THP mode %s on %s, but Unavailable() = %q", mode, runtime.GOOS, why)
	}
}
