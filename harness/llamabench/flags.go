package llamabench

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/damascus-llm/damascus/internal/cli"
)

// Ints is a flag of comma-separated ints, as llama-bench's -p and -n.
func Ints(p *[]int) flag.Value { return ints{p} }

type ints struct{ p *[]int }

func (l ints) String() string {
	if l.p == nil { // the flag package's zero value, for its defaults
		return ""
	}
	return JoinInts(*l.p)
}

func (l ints) Set(s string) error {
	*l.p = (*l.p)[:0]
	for _, f := range cli.SplitList(s) {
		v, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("not a number: %q", f)
		}
		*l.p = append(*l.p, v)
	}
	return nil
}

// JoinInts renders v as Ints reads it.
func JoinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
