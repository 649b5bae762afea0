package segment

import (
	"io"

	"github.com/aegisrelay/aegis/internal/vfs"
)

// File is what ReadTail reads: a file's bytes and its size. A File that
// also has a RawSize method (package journal's files do) tells the size
// on disk, pre-zeroed space included, apart from the size of its content.
type File interface {
	io.ReaderAt
	Size() (int64, error)
}

// readFile is a file opened to read, as a File.
type readFile struct{ vfs.File }

func openFile(fsys vfs.FS, path string) (readFile, error) {
	f, err := fsys.Open(path)
	return readFile{f}, err
}

func (f readFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
