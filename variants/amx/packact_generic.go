//go:build !amd64 || noasm

package amx

// packActivations is packActivationsGo: no assembly in this build.
func packActivations(pack, xq []byte, j0, j1, n, nb int, sum32 bool) {
	packActivationsGo(pack, xq, j0, j1, n, nb, sum32)
}
