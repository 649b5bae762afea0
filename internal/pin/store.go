package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/aegisrelay/aegis/internal/atomicfile"
	"github.com/aegisrelay/aegis/internal/userfiles"
)

// Bounds of a pin file. MaxFileSize bounds a pin file read, so that a
// wrong path (a log, a device) is not read whole, and written: no writer
// (Update) writes a file Read would refuse. A pin file holds at most
// MaxPinned pins and MaxPinned seen definitions, each of at most
// MaxDefinition bytes in canonical form, and no more than fits in
// MaxFileSize as Marshal lays them out (Room, EntryBytes): a definition
// indented one member a line may take many times its canonical bytes.
const (
	MaxFileSize   = 64 << 20
	MaxDefinition = 256 << 10
	MaxPinned     = 4096
)

// roomLeft is what a writer that adds pins (a wrap, aegis pin) keeps free
// below MaxFileSize, so that accepting changes (which adds who accepted)
// still fits.
const roomLeft = 1 << 20

// Version is the pin file format's version.
const Version = 1

// Pin is one tool's pinned definition, or one seen that differs from it.
type Pin struct {
	Digest string `json:"digest"` // "sha256:<hex>" of Definition
	// Definition is the canonical JSON (RFC 8785) of the tool's Fields.
	Definition json.RawMessage `json:"definition"`
	// By says how the pin came: "first use" (a wrap pinned it when first
	// listed), "aegis pin" (pinned ahead of time), or "accepted by
	// <user> (uid N)".
	By string `json:"by,omitempty"`
	// UID and User name who accepted it (aegis pin accept).
	UID  *uint64 `json:"uid,omitempty"`
	User string  `json:"user,omitempty"`
	// From names the pinned tool whose definition a renamed tool carries
	// (a seen entry only).
	From string `json:"from,omitempty"`
}

// File is a pin file: one server's pins (Tools) and the definitions a wrap
// saw that differ from them (Seen), which aegis pin diff shows and aegis
// pin accept makes the pins.
type File struct {
	Version int            `json:"version"`
	Server  string         `json:"server"`
	Tools   map[string]Pin `json:"tools"`
	Seen    map[string]Pin `json:"seen,omitempty"`
}

// DigestString is a digest as pin files and aegis pin print it.
func DigestString(d [32]byte) string { return "sha256:" + hex.EncodeToString(d[:]) }

// Path is the pin file of server in the state folder (userfiles.StateDir):
// NAME.pins.json, beside its logs.
func Path(server string) (string, error) {
	dir, err := userfiles.StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, server+".pins.json"), nil
}

// Read reads the pin file at path. A file that does not exist is an
// empty File (nothing pinned yet); one that is not a regular file, too
// large, not the format, or whose digests do not match its definitions
// is refused (ErrFile), and never written over.
func Read(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Version: Version, Tools: map[string]Pin{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrFile, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrFile, path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrFile, path, MaxFileSize)
	}
	return Parse(path, data)
}

// Parse parses a pin file's bytes (path names it in errors): strictly, as
// aegis writes it.
func Parse(path string, data []byte) (*File, error) {
	if why := checkFold(data, false); why != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrFile, path, why)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var pf File
	if err := dec.Decode(&pf); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFile, path, err)
	}
	if pf.Version != Version {
		return nil, fmt.Errorf("%w: %s: version %d; want %d", ErrFile, path, pf.Version, Version)
	}
	if pf.Tools == nil {
		pf.Tools = map[string]Pin{}
	}
	if len(pf.Tools)+len(pf.Seen) > 2*MaxPinned {
		return nil, fmt.Errorf("%w: %s: more than %d tools", ErrFile, path, MaxPinned)
	}
	for _, m := range []map[string]Pin{pf.Tools, pf.Seen} {
		for name, p := range m {
			// The file lays definitions out for a person (Marshal); the
			// pin is their canonical form, which the digest covers.
			c, err := Canonical(p.Definition)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: tool %q: the definition: %v", ErrFile, path, name, err)
			}
			if DigestString(sha256.Sum256(c)) != p.Digest {
				return nil, fmt.Errorf("%w: %s: tool %q: digest %s is not its definition's", ErrFile, path, name, p.Digest)
			}
			p.Definition = c
			m[name] = p
		}
	}
	return &pf, nil
}

// Marshal is the pin file's bytes, as Write writes them: indented, keys
// sorted, one definition per line.
func (pf *File) Marshal() []byte {
	pf.Version = Version
	b, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		panic("pin: marshal: " + err.Error()) // only strings and canonical JSON
	}
	return append(b, '\n')
}

// Size is the bytes of the file as Marshal lays it out.
func (pf *File) Size() int { return len(pf.Marshal()) }

// Room is how many bytes of pins (EntryBytes) a writer may still add to
// a file of size bytes (File.Size).
func Room(size int) int { return MaxFileSize - roomLeft - size }

// EntryBytes is at least what the pin p of tool name adds to the file's
// bytes as Marshal lays it out, in tools or in seen: its definition
// indented one member a line.
func EntryBytes(name string, p Pin) int {
	b, _ := json.MarshalIndent(p, "    ", "  ")
	k, _ := json.Marshal(name)
	return len(b) + len(k) + len(`    : ,`+"\n")
}

// Update changes the pin file at path under an exclusive lock (a lock
// file beside it, NAME.pins.json.lock), so that a wrap pinning and a
// person accepting never lose each other's change: it reads the file
// afresh, calls change, and writes the result atomically
// (internal/atomicfile) if change reports it changed something. A file
// Read refuses is neither changed nor replaced, and a change that would
// make the file one Read refuses (over MaxFileSize) is not written.
func Update(path string, change func(*File) (bool, error)) (*File, error) {
	pf, _, err := update(path, change)
	return pf, err
}

// update is Update, which also returns the file's size as written (0
// when change changed nothing).
func update(path string, change func(*File) (bool, error)) (*File, int, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrFile, err)
	}
	lk, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: lock: %v", ErrFile, err)
	}
	defer lk.Close()
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX); err != nil {
		return nil, 0, fmt.Errorf("%w: lock: %v", ErrFile, err)
	}
	pf, err := Read(path)
	if err != nil {
		return nil, 0, err
	}
	changed, err := change(pf)
	if err != nil || !changed {
		return pf, 0, err
	}
	data := pf.Marshal()
	if len(data) > MaxFileSize {
		return nil, 0, fmt.Errorf("%w: %s would be over %d bytes; not written", ErrFile, path, MaxFileSize)
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return nil, 0, fmt.Errorf("%w: write %s: %v", ErrFile, path, err)
	}
	return pf, len(data), nil
}

// PathFor is the pin file: file when given, else server's default (Path).
func PathFor(file, server string) (string, error) {
	if file != "" {
		return file, nil
	}
	return Path(server)
}
