// Package testfile holds files a test binary writes once, on first use, and
// shares among its tests: each in a temporary directory of its own that
// Main removes when the tests are over.
package testfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A Once is one such file.
type Once struct {
	name  string
	write func(path string) error
	once  sync.Once
	path  string
	err   error
}

// New returns the file called name that write makes at the path it is given.
func New(name string, write func(path string) error) *Once {
	return &Once{name: name, write: write}
}

// Path writes the file the first time it is called and returns its path, or
// the error making it gave (the same error on every call).
func (o *Once) Path() (string, error) {
	o.once.Do(func() {
		dir, err := os.MkdirTemp("", "damascus-test-")
		if err != nil {
			o.err = err
			return
		}
		o.path = filepath.Join(dir, o.name)
		o.err = o.write(o.path)
	})
	return o.path, o.err
}

// Remove deletes the file's directory, if Path made one.
func (o *Once) Remove() {
	if o.path != "" {
		os.RemoveAll(filepath.Dir(o.path))
	}
}

// Main is a TestMain that runs the tests, removes files and exits with the
// tests' status.
func Main(m *testing.M, files ...*Once) {
	code := m.Run()
	for _, f := range files {
		f.Remove()
	}
	os.Exit(code)
}
