package witness

import "testing"

// check fails the test at once on err: a key or note that could not be
// made would fail the test later, for a reason it would not say.
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
