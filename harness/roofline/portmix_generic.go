//go:build !amd64 || noasm

package roofline

// portMixLoops is empty without the amd64 assembly.
var portMixLoops []portMix
