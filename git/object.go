package git

import (
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // git's object names, not a security hash
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Commit objects written without a git process. A task commit and the
// merge commit of its integration are each a `git commit-tree` process
// otherwise, and starting a process costs more CPU than all the rest of
// the work: so muster writes the object itself, byte for byte what
// commit-tree writes (a loose object in the user's object store, as git
// writes it: a temporary file hard-linked into place), whenever the
// commit is the plain kind it makes. Anything out of the ordinary (a
// shared repository's permissions, an identity or date git would
// rewrite) goes to commit-tree as before.

// rawDate is a date as git stores it: seconds and zone.
var rawDate = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,19} [+-][0-9]{4}$`) })

// plainIdent reports whether git would keep name and email as they are
// (ident.c strips "crud" at either end and drops <, > and newlines).
func plainIdent(s string) bool {
	if s == "" || strings.ContainsAny(s, "<>\n\x00") {
		return false
	}
	crud := func(c byte) bool { return c <= ' ' || strings.IndexByte(".,:;<>\"\\'", c) >= 0 }
	return !crud(s[0]) && !crud(s[len(s)-1])
}

// commitBody returns the commit object commit-tree would write for tree,
// parent, msg and the identity in env (GIT_AUTHOR_*, GIT_COMMITTER_*);
// false when git would write anything else.
func commitBody(tree, parent, msg string, env []string, now time.Time) ([]byte, bool) {
	v := map[string]string{}
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok {
			v[k] = val
		}
	}
	nowDate := strconv.FormatInt(now.Unix(), 10) + " " + now.Format("-0700")
	dates := map[string]string{"GIT_AUTHOR_DATE": nowDate, "GIT_COMMITTER_DATE": nowDate}
	for k := range dates {
		if d, ok := v[k]; ok {
			dates[k] = d
		}
	}
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		if !plainIdent(v[k]) {
			return nil, false
		}
	}
	if !rawDate().MatchString(dates["GIT_AUTHOR_DATE"]) || !rawDate().MatchString(dates["GIT_COMMITTER_DATE"]) ||
		strings.IndexByte(msg, 0) >= 0 || !isObjectID(tree) || !isObjectID(parent) {
		return nil, false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tree %s\nparent %s\nauthor %s <%s> %s\ncommitter %s <%s> %s\n\n%s", tree, parent,
		v["GIT_AUTHOR_NAME"], v["GIT_AUTHOR_EMAIL"], dates["GIT_AUTHOR_DATE"],
		v["GIT_COMMITTER_NAME"], v["GIT_COMMITTER_EMAIL"], dates["GIT_COMMITTER_DATE"], msg)
	if !gitUTF8(b.String()) {
		return nil, false // commit-tree would re-encode it (verify_utf8)
	}
	return []byte(b.String()), true
}

// gitUTF8 reports whether git's verify_utf8 accepts s as it is: valid
// UTF-8 without the noncharacters U+xFFFE and U+xFFFF.
func gitUTF8(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r&0xfffe == 0xfffe {
			return false
		}
	}
	return true
}

// shared reports whether the user's repository sets core.sharedRepository
// (git then gives its files a group's permissions).
func (w *Workspace) shared() bool {
	for i := 1; i < len(w.carry); i += 2 {
		if k, _, _ := strings.Cut(w.carry[i], "="); strings.EqualFold(k, "core.sharedrepository") {
			return true
		}
	}
	return false
}

// writeCommitObject writes a commit as commit-tree would, without a git
// process; "" (and no error) when it is not the plain kind (commitBody)
// or the repository is shared.
func (w *Workspace) writeCommitObject(tree, parent, msg string, env []string) (string, error) {
	if w.shared() || w.format != "sha1" && w.format != "sha256" || w.objects == "" {
		return "", nil
	}
	body, ok := commitBody(tree, parent, msg, env, time.Now())
	if !ok {
		return "", nil
	}
	return writeLoose(w.objects, w.format, "commit", body)
}

// looseWriters keeps deflaters for writeLoose: a new one clears about
// a megabyte of state (flate's window and hash tables), which was a
// quarter of muster's own CPU per task; Reset makes a used one write
// exactly the stream a new one would. A few are kept (a sync.Pool would
// drop them at every collection).
var looseWriters = make(chan *zlib.Writer, 4)

// looseWriter returns a deflater writing to f, a kept one if any.
func looseWriter(f *os.File) *zlib.Writer {
	select {
	case z := <-looseWriters:
		z.Reset(f)
		return z
	default:
		z, _ := zlib.NewWriterLevel(f, zlib.BestSpeed) // core.looseCompression's default
		return z
	}
}

// writeLoose writes an object into the loose object store at objects, as
// git does: deflated into a temporary file in its fan-out directory,
// then hard-linked to its name (an object already there stays).
func writeLoose(objects, format, kind string, body []byte) (string, error) {
	newHash := sha1.New
	if format == "sha256" {
		newHash = sha256.New
	}
	h := newHash()
	hdr := fmt.Sprintf("%s %d\x00", kind, len(body))
	h.Write([]byte(hdr))
	h.Write(body)
	oid := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(objects, oid[:2])
	final := filepath.Join(dir, oid[2:])
	if _, err := os.Lstat(final); err == nil {
		return oid, nil
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if errors.Is(err, fs.ErrNotExist) {
		// The fan-out directory's first object (one stat less for
		// every other).
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		f, err = os.CreateTemp(dir, "tmp_obj_")
	}
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	z := looseWriter(f)
	_, err = z.Write([]byte(hdr))
	if err == nil {
		_, err = z.Write(body)
	}
	if cerr := z.Close(); err == nil {
		err = cerr
	}
	z.Reset(nil)
	select {
	case looseWriters <- z:
	default:
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o444)
	}
	if err != nil {
		return "", fmt.Errorf("write object %s: %w", oid, err)
	}
	if err := os.Link(tmp, final); err != nil && !errors.Is(err, os.ErrExist) {
		if err := os.Rename(tmp, final); err != nil {
			return "", fmt.Errorf("write object %s: %w", oid, err)
		}
	}
	return oid, nil
}
