#!/usr/bin/env bash
# Packs the pinned llama.cpp's source for a CUDA build on the lent H200
# (issue 18's rival): npm node-llama-cpp@3.21.1 ships it as the git bundle
# llama/gitRelease.bundle (the same source as @node-llama-cpp/linux-x64@3.21.1's
# libraries). The backends a CUDA build of llama-bench does not use, the web
# UI, docs, models and tests are left out, so the archive (about 4 MB) fits
# in what the device tool carries.
#
#   scripts/llamacpp-src.sh .device/llama-src.tar.xz
set -euo pipefail
out=$(realpath -m "${1:?usage: llamacpp-src.sh OUT.tar.xz}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent node-llama-cpp@3.21.1 >/dev/null
tar xzf node-llama-cpp-3.21.1.tgz package/llama/gitRelease.bundle
git clone -q package/llama/gitRelease.bundle src 2>/dev/null
cd src
git log -1 --format='bundle head %H %s' >&2
drop=(.git docs models media gguf-py tests examples app benches pocs tools/ui tools/server)
for b in vulkan sycl opencl metal hexagon et openvino webgpu cann virtgpu; do drop+=("ggml/src/ggml-$b"); done
tar "${drop[@]/#/--exclude=./}" -cJf "$out" .
ls -l "$out" >&2
