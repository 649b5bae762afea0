package tlog

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/journal/record"
)

// OriginPrefix begins every origin aegis gives a log: part of the format.
const OriginPrefix = "aegis.log/"

// Origin returns the origin of the log whose first line (seq 0, without
// its '\n') is line0: OriginPrefix and the first 16 hex digits of the
// line's SHA-256 (doc.go, "Origin").
func Origin(line0 []byte) string {
	h := sha256.Sum256(line0)
	return OriginPrefix + hex.EncodeToString(h[:8])
}

// A Checkpoint is a signed statement of a log's tree: its origin, its
// size (the number of leaves, the records seq 0..Size-1) and its root.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   Hash
}

// Body returns the checkpoint's note text: the C2SP tlog-checkpoint body,
// "<origin>\n<size>\n<base64 root>\n".
func (c Checkpoint) Body() string {
	return c.Origin + "\n" + strconv.FormatUint(c.Size, 10) + "\n" + c.Root.String() + "\n"
}

// Verifier returns the note verifier of checkpoints of origin signed by
// pub: the key name is the origin.
func Verifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	return note.NewVerifier(vkey)
}

// VerifierKey returns the note verifier key (name+hash+base64) of
// checkpoints of origin signed by pub, for tools that speak signed notes.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	return note.NewEd25519VerifierKey(origin, pub)
}

// Signer returns the note signer of checkpoints of origin with key, any
// crypto.Signer of Ed25519 (an ed25519.PrivateKey, a key an ssh-agent
// holds): its key name is the origin and its key hash the one x/mod's
// note gives the verifier key (VerifierKey), so that what it signs opens
// with Verifier. No private key string is made: the key signs the note
// itself. A signature by a key that is not an ed25519.PrivateKey is
// checked before it is returned, since a signer that returns anything
// else would leave a checkpoint no one can verify. A key that is not
// Ed25519, or a signature that does not verify, is an error matching
// record.ErrKey.
func Signer(origin string, key crypto.Signer) (note.Signer, error) {
	pub, ok := key.Public().(ed25519.PublicKey)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: signing key is %T, not Ed25519", record.ErrKey, key.Public())
	}
	v, err := Verifier(origin, pub)
	if err != nil {
		return nil, err
	}
	_, check := key.(ed25519.PrivateKey)
	return &noteSigner{name: origin, hash: v.KeyHash(), key: key, pub: pub, check: !check}, nil
}

// noteSigner is Signer's note.Signer. It is safe for concurrent use if
// its key is.
type noteSigner struct {
	name  string
	hash  uint32
	key   crypto.Signer
	pub   ed25519.PublicKey
	check bool // verify each signature: the key is not known to be sound
}

func (s *noteSigner) Name() string    { return s.name }
func (s *noteSigner) KeyHash() uint32 { return s.hash }

func (s *noteSigner) Sign(msg []byte) ([]byte, error) {
	sig, err := s.key.Sign(nil, msg, crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("signing a checkpoint: %w", err)
	}
	if s.check && !ed25519.Verify(s.pub, msg, sig) {
		return nil, fmt.Errorf("%w: the key's signature of a checkpoint does not verify", record.ErrKey)
	}
	return sig, nil
}

// Sign returns c as a signed note.
func Sign(c Checkpoint, s note.Signer) ([]byte, error) {
	return note.Sign(&note.Note{Text: c.Body()}, s)
}

// Open parses a signed checkpoint and checks its signature by pub under
// the key name its origin line gives. Extension lines after the root are
// allowed and ignored (C2SP tlog-checkpoint); signatures by other keys
// are ignored as long as pub's is there and good.
func Open(msg []byte, pub ed25519.PublicKey) (Checkpoint, error) {
	origin, _, _ := strings.Cut(string(msg), "\n")
	v, err := Verifier(origin, pub)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: origin %q: %v", ErrCheckpoint, origin, err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	return ParseBody(n.Text)
}

// ParseBody parses a checkpoint's note text, unsigned, as a C2SP
// tlog-checkpoint: torchwood's parser, which bounds its size (1 MB),
// holds the size to a canonical decimal and the root to 32 bytes of
// base64, and allows after the root only extension lines, each non-empty
// and ended by '\n'. The extension lines are not kept; an empty origin
// is refused too.
func ParseBody(text string) (Checkpoint, error) {
	tc, err := torchwood.ParseCheckpoint(text)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	if tc.Origin == "" {
		return Checkpoint{}, fmt.Errorf("%w: empty origin", ErrCheckpoint)
	}
	return Checkpoint{Origin: tc.Origin, Size: uint64(tc.N), Root: Hash(tc.Hash)}, nil
}

// Split cuts a file of signed notes written one after the other (a
// checkpoint history, doc.go) into the notes. A note is its text lines,
// a blank line, and its signature lines, each beginning "— "; the next
// note begins at the first line after them that does not. A last note
// cut short (a torn append) is returned as it is, for Open to refuse.
func Split(data []byte) [][]byte {
	var notes [][]byte
	for len(data) > 0 {
		end := len(data)
		if i := bytes.Index(data, []byte("\n\n")); i >= 0 {
			j := i + 2
			for j < len(data) && bytes.HasPrefix(data[j:], []byte("— ")) {
				k := bytes.IndexByte(data[j:], '\n')
				if k < 0 {
					j = len(data)
					break
				}
				j += k + 1
			}
			end = j
		}
		notes = append(notes, data[:end])
		data = data[end:]
	}
	return notes
}

// SplitHistory is Split with a torn last note set apart: the bytes a
// crash during an append leaves at the end of a history (doc.go,
// "Checkpoints"), which are no checkpoint and no forgery of one. A last
// note is torn if it is cut short of its signature line's end: it does
// not end in '\n', or it holds no blank line, or nothing follows its
// blank line; and it begins as a checkpoint of aegis does (its bytes are
// a prefix of OriginPrefix, or begin with it). A last note that ends in
// a whole signature line is not torn, whatever it holds: Open judges it.
func SplitHistory(data []byte) (notes [][]byte, torn []byte) {
	notes = Split(data)
	if len(notes) == 0 {
		return notes, nil
	}
	last := notes[len(notes)-1]
	// Cut within the "— " that begins its signature line, a note ends at
	// its blank line and the bytes of the dash read as a note of their own.
	if k := len(notes) - 2; k >= 0 && len(last) < len(sigStart) && bytes.HasPrefix([]byte(sigStart), last) && bytes.HasSuffix(notes[k], []byte("\n\n")) {
		return notes[:k], data[len(data)-len(notes[k])-len(last):]
	}
	if !tornNote(last) {
		return notes, nil
	}
	return notes[:len(notes)-1], last
}

// sigStart begins a signature line of a note.
const sigStart = "— "

func tornNote(n []byte) bool {
	if !bytes.HasPrefix(n, []byte(OriginPrefix)) && !bytes.HasPrefix([]byte(OriginPrefix), n) {
		return false
	}
	i := bytes.Index(n, []byte("\n\n"))
	return n[len(n)-1] != '\n' || i < 0 || i+2 == len(n)
}

// TornError is a history's torn last note (SplitHistory): what a crash
// during an append leaves. It matches ErrTorn.
type TornError struct {
	Where string // the history file
	Bytes int    // the torn note's length
}

func (e *TornError) Error() string {
	return fmt.Sprintf("%s: its last %d bytes are a checkpoint cut short, as a crash during an append leaves it (not a checkpoint, not checked)", e.Where, e.Bytes)
}

func (e *TornError) Is(target error) bool { return target == ErrTorn }

// OpenAll opens every checkpoint in data (one, or a history: Split), each
// checked against pub. It returns those that open and an error joining
// the reasons the others do not; a torn last note (SplitHistory) is a
// *TornError, matching ErrTorn and not ErrCheckpoint.
func OpenAll(data []byte, pub ed25519.PublicKey) ([]Checkpoint, error) {
	var cps []Checkpoint
	var errs []error
	notes, torn := SplitHistory(data)
	for i, n := range notes {
		c, err := Open(n, pub)
		if err != nil {
			errs = append(errs, fmt.Errorf("checkpoint %d: %w", i+1, err))
			continue
		}
		cps = append(cps, c)
	}
	if torn != nil {
		errs = append(errs, &TornError{Where: "checkpoint " + strconv.Itoa(len(notes)+1), Bytes: len(torn)})
	} else if len(cps) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%w: no checkpoint", ErrCheckpoint))
	}
	return cps, errors.Join(errs...)
}
