package tlog

import "errors"

// Errors of the package. Classify with errors.Is; an error may match
// several (Check joins what it finds).
var (
	// ErrCheckpoint means a checkpoint is not one: not a signed note, not
	// the tlog-checkpoint body, or its signature is not by the key given.
	ErrCheckpoint = errors.New("tlog: not a valid checkpoint")
	// ErrTorn means a checkpoint history ends in a checkpoint cut short:
	// what a crash during an append leaves (SplitHistory), as a torn
	// line ends a log. Like a log's torn tail it makes a check
	// incomplete, not failed: the torn bytes are no checkpoint.
	ErrTorn = errors.New("tlog: checkpoint history ends in a torn checkpoint")
	// ErrOrigin means a checkpoint names another log than the one read.
	ErrOrigin = errors.New("tlog: checkpoint of another log")
	// ErrRewritten means records named by a checkpoint are not the log's:
	// a record was changed, removed or inserted before the checkpoint's size.
	ErrRewritten = errors.New("tlog: log rewritten")
	// ErrCut means the log holds fewer records than a checkpoint names,
	// and those it holds are the checkpoint's: records were cut from its tail.
	ErrCut = errors.New("tlog: log tail cut")
	// ErrRollback means the log is an older state of itself than a
	// checkpoint names: a copy that ends where a session or an earlier
	// checkpoint ended, put back in place of the log.
	ErrRollback = errors.New("tlog: log rolled back to an older copy")
	// ErrFork means two checkpoints of one log cannot both be states of one
	// append-only log: one size with two roots, or a smaller tree that is not
	// the first records of a larger one.
	ErrFork = errors.New("tlog: checkpoints fork")
	// ErrProof means a proof does not check: its hashes do not lead from
	// the record or the old tree to the checkpoint's root.
	ErrProof = errors.New("tlog: proof does not check")
	// ErrNoRecord means the log holds no record with the seq asked for
	// within the checkpoint's size.
	ErrNoRecord = errors.New("tlog: no such record")
	// ErrSet means the files of the log cannot be read as one chain
	// (a missing or doubled segment, package segment's Plan).
	ErrSet = errors.New("tlog: log files do not form one log")
)
