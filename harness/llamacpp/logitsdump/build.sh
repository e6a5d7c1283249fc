#!/usr/bin/env bash
# Builds logitsdump against a llama.cpp build of the pinned source:
#
#   harness/llamacpp/logitsdump/build.sh SRC LIB OUT
#
# SRC: the pinned llama.cpp source (scripts/llamacpp-src.sh packs it; its
#      include/llama.h and ggml/include/*.h are used);
# LIB: the directory holding libllama*.so, libggml*.so and libggml-base.so —
#      the npm CPU libraries (baseline/llama.cpp/node_modules/@node-llama-cpp/
#      linux-x64/bins/linux-x64) or a CUDA build's (/tmp/llcu/b/bin);
# OUT: the executable (the libraries are found through its rpath, LIB).
set -euo pipefail
src=$(realpath "${1:?usage: build.sh SRC LIB OUT}") lib=$(realpath "${2:?usage: build.sh SRC LIB OUT}") out=${3:?usage: build.sh SRC LIB OUT}
here=$(dirname "$(realpath "$0")")
pick() { # the first of the names given that LIB holds, as -l:NAME
	local n
	for n in "$@"; do
		if [ -e "$lib/$n" ]; then echo "-l:$n"; return; fi
	done
	echo "build.sh: none of $* in $lib" >&2
	exit 1
}
llama=$(pick libllama.so libllama.v0.4.0.so)
ggml=$(pick libggml.so libggml.v0.4.0.so)
base=$(pick libggml-base.so)
[ -e "$src/include/llama.h" ] && [ -e "$src/ggml/include/ggml.h" ] || { echo "build.sh: no include/llama.h or ggml/include/ggml.h under $src" >&2; exit 1; }
rev=${LLAMACPP_REV:-source at $src} # LLAMACPP_REV names it (the JSON sidecar's llama_cpp_source)
${CC:-cc} -O2 -std=c11 -Wall -Wextra -Wno-unused-parameter -o "$out" "$here/logitsdump.c" \
	-I "$src/include" -I "$src/ggml/include" -DLOGITSDUMP_SRC="\"$rev\"" \
	-L "$lib" "$llama" "$ggml" "$base" -Wl,-rpath,"$lib" -ldl
echo "built $out against $lib" >&2
