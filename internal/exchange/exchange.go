// Package exchange owns every file muster exchanges with an invocation of
// an agent, a planner, a reviewer or a gate (ARCHITECTURE.md §8.2).
//
// Per invocation muster creates, fresh, a directory of its own that the
// invocation cannot write, holding four:
//
//   - in/   written by muster only, before the start (prompt, diff, plan
//     text); the invocation may read it, never write it;
//   - out/  written by the invocation only (plan-out, results); muster
//     reads it through ReadOut: an os.Root, O_NOFOLLOW|O_NONBLOCK, and a
//     regular file no larger than its cap, or nothing;
//   - home/ and tmp/, the invocation's own (a coder's home is made once
//     per attempt and reused by that coder's later rounds: Options.Home).
//
// muster never writes into a directory an invocation can write except
// through WriteFile (a fresh file renamed into place: a link planted at the
// name is replaced, never followed) and never reads one except through
// ReadFile. Writable and Readable list an invocation's directories in one
// place, for the confinement (Landlock now, the mount namespace next).
package exchange

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

// The names of an invocation's directories.
const (
	InDir   = "in"
	OutDir  = "out"
	HomeDir = "home"
	TmpDir  = "tmp"
)

// Dir is one invocation's exchange.
type Dir struct {
	Path string // muster's, never writable by the invocation
	In   string // muster-written, read-only to the invocation
	Out  string // written by the invocation, read by muster through ReadOut
	Home string // the invocation's home (maybe shared with its earlier rounds)
	Tmp  string // the invocation's TMPDIR
}

// Options shape an invocation's directory.
type Options struct {
	// Home, when set, is a home made earlier by NewHome (a coder's, reused
	// across its rounds); else the invocation gets a fresh home/.
	Home string
	// Tmp, when set, is a TMPDIR made earlier (a coder's); else a fresh tmp/.
	Tmp string
}

// New creates an invocation's directory under parent, fresh, with a name
// that begins with prefix and ends in a random part (os.MkdirTemp): no
// invocation can plant what muster creates next, not even one that runs
// unconfined and can name the parent. parent is created when missing; it
// must be muster's own (never a directory an invocation can write).
func New(parent, prefix string, o Options) (*Dir, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("invocation directory: %w", err)
	}
	path, err := os.MkdirTemp(parent, prefix+"-")
	if err != nil {
		return nil, fmt.Errorf("invocation directory: %w", err)
	}
	if err := os.Chmod(path, 0o755); err != nil {
		return nil, fmt.Errorf("invocation directory: %w", err)
	}
	d := &Dir{Path: path, In: filepath.Join(path, InDir), Out: filepath.Join(path, OutDir),
		Home: o.Home, Tmp: o.Tmp}
	mk := []string{d.In, d.Out}
	if d.Home == "" {
		d.Home = filepath.Join(path, HomeDir)
		mk = append(mk, d.Home)
	}
	if d.Tmp == "" {
		d.Tmp = filepath.Join(path, TmpDir)
		mk = append(mk, d.Tmp)
	}
	for _, p := range mk {
		if err := os.Mkdir(p, 0o700); err != nil {
			return nil, fmt.Errorf("invocation directory: %w", err)
		}
	}
	return d, nil
}

// NewHome creates a fresh directory under parent (its name begins with
// prefix) for a home or a TMPDIR that later invocations of the same coder
// share (Options.Home, Options.Tmp).
func NewHome(parent, prefix string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("agent home: %w", err)
	}
	p, err := os.MkdirTemp(parent, prefix+"-")
	if err != nil {
		return "", fmt.Errorf("agent home: %w", err)
	}
	return p, nil
}

// Writable lists the directories the invocation may write: out/, its home
// and its TMPDIR. Never in/, never Path.
func (d *Dir) Writable() []string {
	if d == nil {
		return nil
	}
	return []string{d.Out, d.Home, d.Tmp}
}

// Readable lists what the invocation may only read: in/.
func (d *Dir) Readable() []string {
	if d == nil {
		return nil
	}
	return []string{d.In}
}

// InFile returns the path of in/name (what an invocation is told to read).
func (d *Dir) InFile(name string) string { return filepath.Join(d.In, name) }

// OutFile returns the path of out/name (what an invocation is told to write).
func (d *Dir) OutFile(name string) string { return filepath.Join(d.Out, name) }

// WriteIn writes in/name, a file that must not exist yet (in/ is fresh
// and muster's alone), read-only (0444). It returns the file's path.
func (d *Dir) WriteIn(name string, data []byte) (string, error) {
	if err := plainName(name); err != nil {
		return "", err
	}
	r, err := os.OpenRoot(d.In)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	defer r.Close()
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o444)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return d.InFile(name), nil
}

// ReadOut reads out/name: see ReadFile.
func (d *Dir) ReadOut(name string, limit int64) ([]byte, error) {
	return ReadFile(d.Out, name, limit)
}

// ErrNotRegular is returned for a path that is a link, a FIFO, a device, a
// directory or a socket where muster expects a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file larger than its cap.
var ErrTooLarge = errors.New("larger than its cap")

// ReadFile reads rel under dir, a directory an invocation may write:
// through an os.Root on dir (nothing outside it is reached), opened with
// O_NOFOLLOW|O_NONBLOCK (a FIFO never blocks muster), and only when fstat
// says a regular file of at most limit bytes, before a byte is read. A
// link at rel is refused (ErrNotRegular). A missing file: nil, nil.
func ReadFile(dir, rel string, limit int64) ([]byte, error) {
	f, err := Open(dir, rel, limit)
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("read %s: %w (%d bytes)", rel, ErrTooLarge, limit)
	}
	return b, nil
}

// ReadPath is ReadFile of filepath.Base(path) in filepath.Dir(path).
func ReadPath(path string, limit int64) ([]byte, error) {
	return ReadFile(filepath.Dir(path), filepath.Base(path), limit)
}

// Open opens rel under dir for reading as ReadFile does; the caller closes
// the file. A missing file: nil, nil.
func Open(dir, rel string, limit int64) (*os.File, error) {
	r, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	defer r.Close()
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		if isLinkErr(err) {
			return nil, fmt.Errorf("read %s: %w (a link)", rel, ErrNotRegular)
		}
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if err := check(r, f, rel, limit); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check refuses what is not a regular file of at most limit bytes, and a
// name that was a link when opened (os.Root follows a link that stays
// inside the root; muster follows none: the open file must be the one
// Lstat finds at the name).
func check(r *os.Root, f *os.File, rel string, limit int64) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("read %s: %w (%s)", rel, ErrNotRegular, kind(st.Mode()))
	}
	lst, err := r.Lstat(rel)
	if err != nil || !lst.Mode().IsRegular() || !os.SameFile(st, lst) {
		return fmt.Errorf("read %s: %w (a link)", rel, ErrNotRegular)
	}
	if limit >= 0 && st.Size() > limit {
		return fmt.Errorf("read %s: %w (%d bytes, at most %d)", rel, ErrTooLarge, st.Size(), limit)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeSymlink != 0:
		return "a link"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeDevice != 0, t&fs.ModeCharDevice != 0:
		return "a device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// isLinkErr reports an open refused because the name is a link (ELOOP
// from O_NOFOLLOW) or a link out of the root.
func isLinkErr(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EXDEV) || isEscape(err)
}

func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

// Stat returns the size of rel under dir when it is a regular file (not
// a link), else -1; it opens nothing.
func Stat(dir, rel string) int64 {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return -1
	}
	defer r.Close()
	st, err := r.Lstat(rel)
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	return st.Size()
}

var seq atomic.Uint64

// WriteFile writes rel under dir, a directory an invocation may write (an
// agent's home being seeded, a transcript), with perm: the content goes
// to a fresh file beside it (O_EXCL) that is then renamed over rel, so a
// link, a FIFO or a hard link planted at rel is replaced, never written
// through; every directory on the way is reached through an os.Root on
// dir, so a link among them cannot lead outside dir.
func WriteFile(dir, rel string, data []byte, perm fs.FileMode) error {
	return writeFrom(dir, rel, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// CopyFile writes rel under dir as WriteFile does, with the content of
// src, a file of muster's or the user's own (read with O_NOFOLLOW:
// never through a link), of at most limit bytes.
func CopyFile(dir, rel, src string, limit int64, perm fs.FileMode) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("copy %s: %w (%s)", src, ErrNotRegular, kind(st.Mode()))
	}
	if st.Size() > limit {
		return fmt.Errorf("copy %s: %w (%d bytes, at most %d)", src, ErrTooLarge, st.Size(), limit)
	}
	return writeFrom(dir, rel, perm, func(w io.Writer) error {
		_, err := io.Copy(w, io.LimitReader(in, limit))
		return err
	})
}

func writeFrom(dir, rel string, perm fs.FileMode, fill func(io.Writer) error) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	defer r.Close()
	return writeIn(r, rel, perm, fill)
}

// WriteFileIn is WriteFile through a root the caller holds open (a
// directory it checked once, which a second open by name could find
// replaced).
func WriteFileIn(r *os.Root, rel string, data []byte, perm fs.FileMode) error {
	return writeIn(r, rel, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeIn writes rel, relative below r, through r (see WriteFile).
func writeIn(r *os.Root, rel string, perm fs.FileMode, fill func(io.Writer) error) error {
	rel = filepath.Clean(rel)
	if rel == "." || filepath.IsAbs(rel) {
		return fmt.Errorf("write %s: not a relative file name", rel)
	}
	if parent := filepath.Dir(rel); parent != "." {
		if err := r.MkdirAll(parent, 0o700); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
	}
	tmp := filepath.Join(filepath.Dir(rel), ".muster-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(seq.Add(1), 10))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		_ = r.Remove(tmp)
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// AppendFile appends data to rel under dir (a transcript in a directory
// an invocation may write): opened through an os.Root with
// O_NOFOLLOW|O_NONBLOCK, and written only when it is a regular file (or
// was just created).
func AppendFile(dir, rel string, data []byte) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("append %s: %w", rel, err)
	}
	defer r.Close()
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if isLinkErr(err) {
			return fmt.Errorf("append %s: %w (a link)", rel, ErrNotRegular)
		}
		return fmt.Errorf("append %s: %w", rel, err)
	}
	defer f.Close()
	if err := check(r, f, rel, -1); err != nil {
		return err
	}
	if links(f) > 1 {
		return fmt.Errorf("append %s: %w (a hard link)", rel, ErrNotRegular)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("append %s: %w", rel, err)
	}
	return nil
}

// links returns the open file's link count (1 when unknown).
func links(f *os.File) uint64 {
	st, err := f.Stat()
	if err != nil {
		return 1
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink) //nolint:unconvert // Nlink is uint32 on some platforms (arm64)
	}
	return 1
}

func plainName(name string) error {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return fmt.Errorf("exchange: %q is not a plain file name", name)
	}
	return nil
}

// Remove removes rel under dir (a file of muster's in a directory an
// invocation may write) through an os.Root: a link on the way is not
// followed out of dir; a link at rel is itself removed. A missing file
// is no error.
func Remove(dir, rel string) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	defer r.Close()
	if err := r.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	return nil
}

// RemoveAll removes rel under dir (a directory of muster's in one an
// invocation may write, such as what an agent CLI left in its home) and
// everything below it, through an os.Root: a link on the way is not
// followed out of dir; a link at rel is itself removed. A missing path
// is no error.
func RemoveAll(dir, rel string) error {
	r, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	defer r.Close()
	if err := r.RemoveAll(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	return nil
}
