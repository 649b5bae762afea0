package witness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/journal/tlog"
)

// AddCheckpointPath is the tlog-witness endpoint, appended to a witness's
// URL: part of the protocol.
const AddCheckpointPath = "/add-checkpoint"

// maxAnswer bounds what is read of a witness's answer: a few signature
// lines, or a size.
const maxAnswer = 64 << 10

// A Witness is one witness: where it listens and the key its
// cosignatures verify with. Immutable once made; safe for concurrent use.
type Witness struct {
	// URL is the witness's base URL; requests go to URL+AddCheckpointPath.
	URL string
	// Key is the witness's note verifier key as given (ParseKey).
	Key string
	// Verifier checks the witness's cosignature lines.
	Verifier note.Verifier
}

// New returns the witness at url whose key is vkey (ParseKey).
func New(url, vkey string) (Witness, error) {
	v, err := ParseKey(vkey)
	if err != nil {
		return Witness{}, err
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return Witness{}, fmt.Errorf("witness: %q: want an http:// or https:// URL", url)
	}
	return Witness{URL: strings.TrimSuffix(url, "/"), Key: vkey, Verifier: v}, nil
}

// Name is the witness's key name, which its cosignature lines carry.
func (w Witness) Name() string { return w.Verifier.Name() }

// AddCheckpoint asks the witness to cosign the signed checkpoint note,
// whose tree extends the tree of oldSize leaves the witness holds, as
// proof shows (RFC 6962 consistency proof; none when oldSize is 0 or the
// sizes are equal): POST URL/add-checkpoint with "old <oldSize>\n", one
// base64 hash per line, a blank line and the note (C2SP tlog-witness).
//
// It returns the witness's cosignature line(s), "— <name> <base64>\n",
// checked against the note with w.Verifier: appended to the note they make
// the witnessed checkpoint. A 409 Conflict is a *ConflictError holding the
// witness's size (and, if that size is larger than the note's, matches
// ErrAhead too); 404 and 403 are ErrUnknownLog; 422 ErrProof; no answer
// ErrUnreachable; anything else ErrAnswer: a redirect (never followed,
// whatever hc's CheckRedirect), an answer over 64 KiB (no more is read).
// None of these answers is authenticated (the protocol signs only
// cosignatures): a size in a 409 is the witness's word, or that of
// whatever answered in its place. hc's timeout and ctx bound the
// request.
func (w Witness) AddCheckpoint(ctx context.Context, hc *http.Client, oldSize uint64, proof []tlog.Hash, signed []byte, size uint64) ([]byte, error) {
	var body bytes.Buffer
	body.Grow(32 + 45*len(proof) + len(signed))
	body.WriteString("old ")
	body.WriteString(strconv.FormatUint(oldSize, 10))
	body.WriteByte('\n')
	for _, h := range proof {
		body.WriteString(h.String())
		body.WriteByte('\n')
	}
	body.WriteByte('\n')
	body.Write(signed)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+AddCheckpointPath, &body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	// A redirect is an answer, never followed: the checkpoint goes only
	// to the URL the user named, and a 3xx from it is a witness that
	// does not speak the protocol (or something between that does not
	// belong there). The copy shares hc's transport and its pool.
	c := *hc
	c.CheckRedirect = refuseRedirect
	resp, err := c.Do(req)
	if err != nil {
		// The error may quote what the server sent (a malformed
		// header line, whole).
		return nil, fmt.Errorf("%w: %s", ErrUnreachable, printable(err.Error()))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the answer: %s", ErrUnreachable, printable(err.Error()))
	}
	if len(answer) > maxAnswer {
		return nil, fmt.Errorf("%w: %s with an answer longer than %d KiB", ErrAnswer, status(resp), maxAnswer>>10)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("%w: %s to %s: redirects are not followed", ErrAnswer, status(resp), trim([]byte(resp.Header.Get("Location"))))
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return w.checkCosignature(signed, answer)
	case http.StatusConflict:
		s := strings.TrimSuffix(string(answer), "\n")
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != s {
			return nil, fmt.Errorf("%w: 409 Conflict with a body that is no tree size: %s", ErrAnswer, trim(answer))
		}
		ce := &ConflictError{Size: n}
		if n > size {
			return nil, errors.Join(ce, ErrAhead)
		}
		return nil, ce
	case http.StatusNotFound, http.StatusForbidden:
		return nil, fmt.Errorf("%w: %s: %s", ErrUnknownLog, status(resp), trim(answer))
	case http.StatusUnprocessableEntity:
		return nil, fmt.Errorf("%w: %s", ErrProof, trim(answer))
	}
	return nil, fmt.Errorf("%w: %s: %s", ErrAnswer, status(resp), trim(answer))
}

// refuseRedirect is the CheckRedirect of every request to a witness:
// the 3xx itself is returned, never followed.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// checkCosignature returns the lines of answer that are w's signature on
// signed, once note.Open has checked them.
func (w Witness) checkCosignature(signed, answer []byte) ([]byte, error) {
	if len(answer) == 0 || answer[len(answer)-1] != '\n' {
		return nil, fmt.Errorf("%w: 200 OK without signature lines: %s", ErrAnswer, trim(answer))
	}
	msg := append(append([]byte(nil), signed...), answer...)
	n, err := note.Open(msg, note.VerifierList(w.Verifier))
	if err != nil {
		return nil, fmt.Errorf("%w: the witness's answer: %v", ErrCosignature, err)
	}
	var out []byte
	for _, s := range n.Sigs {
		if s.Name == w.Verifier.Name() && s.Hash == w.Verifier.KeyHash() {
			out = append(out, "— "+s.Name+" "+s.Base64+"\n"...)
		}
	}
	if out == nil {
		return nil, fmt.Errorf("%w: the witness answered without its own signature", ErrCosignature)
	}
	return out, nil
}

// trim shortens a witness's answer for an error message, which goes to
// a terminal: quoted, with every byte that is not a printable character
// escaped, so that an answer cannot write control sequences there.
func trim(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		return strconv.QuoteToGraphic(s[:200]) + "…"
	}
	return strconv.QuoteToGraphic(s)
}

// printable returns s with every byte that is not part of a printable
// character written as \xNN: a message may hold what a server sent.
func printable(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 || !unicode.IsGraphic(r) {
			for i := range n {
				fmt.Fprintf(&b, "\\x%02x", s[i])
			}
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// status is the answer's status code and its standard text: the text
// in the answer's status line is the server's, which is not printed.
func status(resp *http.Response) string {
	return strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
}
