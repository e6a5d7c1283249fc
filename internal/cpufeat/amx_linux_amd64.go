package cpufeat

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux arch_prctl codes for dynamically enabled XSAVE features
// (arch/x86/include/uapi/asm/prctl.h) and the tile-data state component.
const (
	archGetXCompPerm  = 0x1022
	archReqXCompPerm  = 0x1023
	xfeatureXTileData = 18
)

func requestTilePermission() error {
	if _, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureXTileData, 0); errno != 0 {
		return fmt.Errorf("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): %w", errno)
	}
	// Confirm: the permitted mask must now include tile data.
	var mask uint64
	if _, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, archGetXCompPerm, uintptr(unsafe.Pointer(&mask)), 0); errno != 0 {
		return fmt.Errorf("arch_prctl(ARCH_GET_XCOMP_PERM): %w", errno)
	}
	if mask&(1<<xfeatureXTileData) == 0 {
		return fmt.Errorf("arch_prctl granted a mask without XTILEDATA: %#x", mask)
	}
	return nil
}
