// Package outfile writes the output files of the project's commands so that
// nothing is lost: the data go to a temporary file beside the target, which
// replaces the target only once it is complete and synced, and only where the
// target is absent or a regular file that is none of the command's inputs.
// A device, FIFO, socket or directory at the target is refused, never
// replaced by a regular file.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Check reports whether path may be replaced by an output file: absent, or a
// regular file (a symlink is followed to it) that is not the same file as
// any of inputs (compared with os.SameFile, so another path, a hard link or
// a symlink to an input is caught too). It returns the path that will be
// replaced: path itself, or a symlink's target.
func Check(path string, inputs ...string) (string, error) {
	target := path
	lst, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil
	}
	if err != nil {
		return "", fmt.Errorf("output %s: %w", path, err)
	}
	st := lst
	if lst.Mode()&fs.ModeSymlink != 0 {
		// Replacing the link itself would leave its target stale; write
		// through it instead.
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return "", fmt.Errorf("output %s is a symlink that does not resolve: %w", path, err)
		}
		if st, err = os.Stat(target); err != nil {
			return "", fmt.Errorf("output %s: %w", path, err)
		}
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("output %s is %s, not a regular file: refusing to replace it", path, describe(st.Mode()))
	}
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue // an input that cannot be stat'ed cannot be the output
		}
		if os.SameFile(st, ist) {
			if in == path {
				return "", fmt.Errorf("output %s is the input file: write to another path", path)
			}
			return "", fmt.Errorf("output %s is the input file %s (the same file by another name): write to another path", path, in)
		}
	}
	return target, nil
}

func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file (" + m.Type().String() + ")"
}

// A File is an output being written: an *os.File on a temporary file beside
// the target. Commit puts it in place; Abort (safe after Commit, so it may be
// deferred) removes it.
type File struct {
	*os.File
	path   string // as the caller named it, for errors
	inputs []string
	mode   fs.FileMode
	done   bool
}

// Create checks path (see Check) and opens a temporary file beside it.
func Create(path string, inputs ...string) (*File, error) {
	target, err := Check(path, inputs...)
	if err != nil {
		return nil, err
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(target); err == nil {
		mode = st.Mode().Perm() // replacing a file keeps its permissions
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*.tmp")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("output %s: directory %s does not exist: %w", path, dir, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	return &File{File: tmp, path: path, inputs: inputs, mode: mode}, nil
}

// Commit syncs and closes the temporary file and renames it over the target,
// checked again first (it may have changed since Create). On any error the
// temporary file is removed and the target left as it was.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("output %s: already committed or aborted", f.path)
	}
	f.done = true
	tmp := f.Name()
	err := f.Chmod(f.mode)
	if err == nil {
		err = f.Sync() // the data must be on disk before the rename is
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("output %s: %w", f.path, err)
	}
	target, err := Check(f.path, f.inputs...)
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("output %s: %w", f.path, err)
	}
	syncDir(filepath.Dir(target))
	return nil
}

// Abort removes the temporary file, unless Commit has run.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	os.Remove(f.Name())
}

// Write writes path with what write produces, through Create and Commit.
func Write(path string, write func(io.Writer) error, inputs ...string) error {
	f, err := Create(path, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// WriteFile writes data to path, as os.WriteFile does but through Create and
// Commit.
func WriteFile(path string, data []byte, inputs ...string) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, inputs...)
}

// syncDir makes the rename durable; where a directory cannot be synced
// (some file systems refuse) the rename has still happened.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
