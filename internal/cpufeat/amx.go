package cpufeat

import (
	"errors"
	"fmt"
	"sync"
)

// Reasons AMX is unusable; [AMX] wraps exactly one of them.
var (
	ErrAMXNotInCPU     = errors.New("the CPU lacks AMX-TILE")
	ErrAMXNotInOS      = errors.New("the OS does not enable the AMX tile state (XCR0 bits 17 and 18)")
	ErrAMXNoPermission = errors.New("the kernel refused AMX tile-data permission")
	ErrAMXHidden       = errors.New("AMX is hidden by $" + HideEnv)
)

var (
	amxOnce sync.Once
	amxErr  error
)

// AMX makes Intel AMX usable by this process and reports nil on success, or
// an error naming why not: the CPU lacks it, the OS does not enable the tile
// state, or the kernel refused permission. Linux grants tile-data permission
// per process on request (arch_prctl ARCH_REQ_XCOMP_PERM); the request is made
// once and its result cached, so calling AMX before every kernel is cheap.
func AMX() error {
	amxOnce.Do(func() { amxErr = enableAMX() })
	return amxErr
}

func enableAMX() error {
	detected()
	switch { // the most fundamental reason first: a CPU without AMX says so, hidden or not
	case !x86.AMXTile:
		return fmt.Errorf("AMX unavailable: %w", ErrAMXNotInCPU)
	case !x86.OSAMX:
		return fmt.Errorf("AMX unavailable: %w", ErrAMXNotInOS)
	case isHidden("amx-tile"):
		return fmt.Errorf("AMX unavailable: %w", ErrAMXHidden)
	}
	if err := requestTilePermission(); err != nil {
		return fmt.Errorf("AMX unavailable: %w: %w", ErrAMXNoPermission, err)
	}
	return nil
}
