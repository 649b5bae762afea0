// Package verifyjson is the document aegis verify --json prints for each
// log: a verify.Report with the log's name, as one JSON object whose
// field names are part of the command's interface (scripts read them).
// Problems, incomplete findings and sessions are always arrays, never
// null; files are listed when the log is more than its one file.
package verifyjson

import "github.com/aegisrelay/aegis/journal/verify"

// Doc is one log's verify --json object.
type Doc struct {
	File       string           `json:"file"`
	Files      []File           `json:"files,omitempty"`
	Status     string           `json:"status"`
	Pinned     bool             `json:"pinned"`
	Records    uint64           `json:"records"`
	Head       string           `json:"head,omitempty"`
	Sessions   []Session        `json:"sessions"`
	Problems   []verify.Problem `json:"problems"`
	Incomplete []verify.Problem `json:"incomplete"`
	Notes      []string         `json:"notes,omitempty"`
	Dropped    int              `json:"more_problems,omitempty"`
	Error      string           `json:"error,omitempty"`
}

// File is one file of a log: its records and their seqs.
type File struct {
	Path     string  `json:"path"`
	Records  uint64  `json:"records"`
	FirstSeq *uint64 `json:"first_seq,omitempty"`
	LastSeq  *uint64 `json:"last_seq,omitempty"`
}

// Session is one session of a log (verify.SessionReport).
type Session struct {
	SID       string `json:"sid"`
	Key       string `json:"key"`
	FirstSeq  uint64 `json:"first_seq"`
	LastSeq   uint64 `json:"last_seq"`
	Records   uint64 `json:"records"`
	Intents   uint64 `json:"intents"`
	Outcomes  uint64 `json:"outcomes"`
	Ended     bool   `json:"ended"`
	EndReason string `json:"end_reason,omitempty"`
	Unsigned  uint64 `json:"unsigned"`
	// SessionKey is the key that signs a session's records when Key, its
	// root, certified it (journal/record/doc.go, "Session keys").
	SessionKey string `json:"session_key,omitempty"`
}

// Unreadable is the document of the log name that could not be read:
// status "unreadable" and the error.
func Unreadable(name string, pinned bool, err error) Doc {
	d := empty(name, pinned)
	d.Status, d.Error = "unreadable", err.Error()
	return d
}

// New is the document of the log name that rep reports on.
func New(name string, pinned bool, rep *verify.Report) Doc {
	d := empty(name, pinned)
	d.Status, d.Records, d.Dropped, d.Notes = rep.Status.String(), rep.Records, rep.Dropped, rep.Notes
	if rep.HasHead {
		d.Head = rep.Head.String()
	}
	if len(rep.Files) > 1 || len(rep.Files) == 1 && rep.Files[0].Path != name {
		for _, f := range rep.Files {
			fj := File{Path: f.Path, Records: f.Records}
			if f.Records > 0 {
				fj.FirstSeq, fj.LastSeq = &f.First, &f.Last
			}
			d.Files = append(d.Files, fj)
		}
	}
	for _, s := range rep.Sessions {
		d.Sessions = append(d.Sessions, Session{s.SID, s.Key, s.FirstSeq, s.LastSeq, s.Records, s.Intents, s.Outcomes, s.Ended, s.EndReason, s.Unsigned, s.SessionKey})
	}
	d.Problems = append(d.Problems, rep.Problems...)
	d.Incomplete = append(d.Incomplete, rep.Gaps...)
	return d
}

func empty(name string, pinned bool) Doc {
	return Doc{File: name, Pinned: pinned, Sessions: []Session{}, Problems: []verify.Problem{}, Incomplete: []verify.Problem{}}
}
