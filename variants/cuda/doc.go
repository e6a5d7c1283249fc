// Package cuda is the ledger's CUDA family: the decode and prefill kernels
// of the engine's ops as CUDA C (kernels/*.cu, embedded), compiled once per
// process by NVRTC for the device's own architecture (machine code, sm_90
// on the H200) and loaded through the driver API (internal/cuda). Nothing
// here needs cgo, nvcc or a GPU to build; without a device every variant
// is listed and skipped (feature "cuda"), never failing.
//
// Why NVRTC rather than PTX compiled ahead of time and committed: the
// development machines have no nvcc and no GPU, so committed outputs could
// only be made on the lent device (scarce time) and would need a check that
// they match their sources; NVRTC ships with every CUDA toolkit and the
// device image has it, compiles the four files in about a second, and
// targets whatever GPU the process finds. The cost is that a machine with
// only the driver (no libnvrtc) cannot run these variants; DAMASCUS_NVRTC
// names the library where the search (internal/cuda) misses it, and
// DAMASCUS_CUDA_DUMP writes the PTX and cubin out for cuobjdump.
//
// Every variant has the ledger's host-slice signature, so it runs through
// the same gate as every CPU variant: it uploads its inputs into device
// scratch buffers, poisons the output (NaN), launches, and downloads. The
// ledger's timing harness (ledger run) calls that form too, so its numbers
// for this family are copy-bound, not kernel speed; the kernel speed is the
// device-resident benchmark in this package's tests (weights uploaded once,
// rotated through copies larger than the L2, launches captured into a CUDA
// graph and timed with events).
package cuda
