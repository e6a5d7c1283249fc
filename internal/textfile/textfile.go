// Package textfile looks things up in line-oriented text files such as
// those under /proc.
package textfile

import (
	"bufio"
	"os"
)

// Find returns what match makes of the first line of the file at path that
// match accepts, or "" when it accepts none or the file cannot be read.
func Find(path string, match func(line string) (string, bool)) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := match(sc.Text()); ok {
			return v
		}
	}
	return ""
}
