package cuda

import "errors"

// MaxActiveBlocks returns how many blocks of f, block threads each with
// shared bytes of dynamic shared memory, one multiprocessor holds at once
// (cuOccupancyMaxActiveBlocksPerMultiprocessor): what a kernel whose blocks
// wait for each other (a grid barrier) may launch per multiprocessor.
func (t *Thread) MaxActiveBlocks(f Function, block, shared int) (int, error) {
	if t.api.cuOccupancyMaxActiveBlocksPerMultiprocessor == nil {
		return 0, errors.New("the driver has no cuOccupancyMaxActiveBlocksPerMultiprocessor")
	}
	var n int32
	err := t.check("cuOccupancyMaxActiveBlocksPerMultiprocessor",
		t.api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, uintptr(f), int32(block), uintptr(shared)))
	return int(n), err
}
