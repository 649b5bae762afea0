package clientconfig

import (
	"os"
	"testing"
)

// check fails the test at once on err: a fixture that could not be made
// would fail the test later, for a reason it would not say.
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// readBytes is os.ReadFile, checked.
func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	check(t, err)
	return b
}

// mustReadFile is ReadFile, checked.
func mustReadFile(t testing.TB, path string) *File {
	t.Helper()
	f, err := ReadFile(path)
	check(t, err)
	return f
}
