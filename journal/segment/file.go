package segment

import (
	"io"
	"os"
)

// File is what ReadTail reads: a file's bytes and its size. A File that
// also has a RawSize method (package journal's files do) tells the size
// on disk, pre-zeroed space included, apart from the size of its content.
type File interface {
	io.ReaderAt
	Size() (int64, error)
}

// Dir is the operating system's directories, as a Lister.
type Dir struct{}

// ReadDir returns the names of the entries of dir, in no set order.
func (Dir) ReadDir(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// osFile is a file opened to read, as a File.
type osFile struct{ *os.File }

func openFile(path string) (osFile, error) {
	f, err := os.Open(path)
	return osFile{f}, err
}

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
