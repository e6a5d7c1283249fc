package numcmp

import "testing"

func TestFirstDiff(t *testing.T) {
	for _, c := range []struct {
		a, b []byte
		want int
	}{
		{nil, nil, -1},
		{[]byte{1, 2, 3}, []byte{1, 2, 3}, -1},
		{[]byte{1, 2}, []byte{1, 2, 3}, -1},
		{[]byte{9, 2, 3}, []byte{1, 2, 3}, 0},
		{[]byte{1, 2, 4}, []byte{1, 2, 3}, 2},
	} {
		if got := FirstDiff(c.a, c.b); got != c.want {
			t.Errorf("FirstDiff(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
