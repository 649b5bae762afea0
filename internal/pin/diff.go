package pin

import (
	"bytes"
	"encoding/json"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff is a unified diff of two canonical definitions, each indented one
// member a line so that a person reads what changed; from and to name
// them.
func Diff(a, b []byte, from, to string) string {
	ud := difflib.UnifiedDiff{A: difflib.SplitLines(indent(a)), B: difflib.SplitLines(indent(b)), FromFile: from, ToFile: to, Context: 3}
	s, err := difflib.GetUnifiedDiffString(ud)
	if err != nil {
		return err.Error()
	}
	return s
}

// indent lays canonical JSON out one member a line, keys in canonical
// order.
func indent(c []byte) string {
	if len(c) == 0 {
		return ""
	}
	var out bytes.Buffer
	if json.Indent(&out, c, "", "  ") != nil {
		return string(c)
	}
	return out.String() // SplitLines ends the last line
}
