//go:build !(linux && amd64)

package cpufeat

import (
	"fmt"
	"runtime"
)

func requestTilePermission() error {
	return fmt.Errorf("no way to request tile permission on %s/%s", runtime.GOOS, runtime.GOARCH)
}
