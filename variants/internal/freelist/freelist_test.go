package freelist

import "testing"

// TestReuse: a Put value comes back from the next Get, and an empty list
// makes new zero values.
func TestReuse(t *testing.T) {
	var l List[[]byte]
	a := l.Get()
	if a == nil || *a != nil {
		t.Fatalf("empty list gave %v, want a new zero value", a)
	}
	*a = make([]byte, 8)
	l.Put(a)
	if b := l.Get(); b != a {
		t.Fatalf("Get after Put gave %p, want %p", b, a)
	}
	if c := l.Get(); c == a {
		t.Fatal("a value was handed out twice")
	}
}

// TestBounded: the list keeps at most 64 values.
func TestBounded(t *testing.T) {
	var l List[int]
	for range 100 {
		l.Put(new(int))
	}
	if n := len(l.free); n != 64 {
		t.Fatalf("kept %d values, want 64", n)
	}
}
