package llamabench

import (
	"os"
	"strconv"
	"strings"
)

// HugePagesKB reads this process's AnonHugePages and FilePmdMapped from
// /proc/self/smaps_rollup; -1 each when unreadable.
func HugePagesKB() (anon, file int64) {
	anon, file = -1, -1
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "AnonHugePages:":
			anon = v
		case "FilePmdMapped:":
			file = v
		}
	}
	return
}
