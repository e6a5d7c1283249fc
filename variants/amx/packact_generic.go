//go:build !amd64 || noasm

package amx

// packActivations is packActivationsGo: no assembly in this build.
func packActivations(pack, xq []byte, n, nb int, sum32 bool) {
	packActivationsGo(pack, xq, n, nb, sum32)
}
