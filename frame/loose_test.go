package frame

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// looseInputs are string ids to read as numbers: the forms the readers
// take and near misses.
var looseInputs = []string{
	"1", " 1 ", "\t1\n", "+1", "-1", "01", "1.0", "1.", ".5", "1e0", "1E+0", "10e-1", "1e", "e1", ".", "+", "-", "",
	" ", "0x1", "0X1f", "0o17", "0b101", "0x", "-0x1", "0x1.5", "0b2", "1_0", "1__0", "_1", "1_", "Infinity", "-Infinity",
	"NaN", "1e400", "9007199254740993", "0x20000000000001", "0xffffffffffffffffffffffff", "٣", "१२", "\u00a01\u00a0", "\ufeff1",
	"\u20281", "\x1c1", "\x851", "1 2", "abc", "1a", "0.0000001", "123456789012345678901234567890", "-0", "00", "𝟙𝟚",
	"\u0661_\u0662", "1,2", "true",
}

func TestJSNumberAgainstNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to check jsNumber against JavaScript: %v", err)
	}
	in, _ := json.Marshal(looseInputs)
	script := `const a = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(JSON.stringify(a.map(s => { const n = Number(s); return Number.isFinite(n) ? String(n) : null; })));`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want []*string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("node's output %q: %v", out, err)
	}
	for i, s := range looseInputs {
		f, ok := jsNumber([]byte(s))
		switch {
		case ok != (want[i] != nil):
			t.Errorf("jsNumber(%q) = %v, %v; node says %v", s, f, ok, fmtp(want[i]))
		case ok:
			w, _ := strconv.ParseFloat(*want[i], 64)
			if f != w {
				t.Errorf("jsNumber(%q) = %v; node says %s", s, f, *want[i])
			}
		}
	}
}

func TestPyIntAgainstPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to check appendPyInt against Python: %v", err)
	}
	in, _ := json.Marshal(looseInputs)
	script := `
import json, sys
out = []
for s in json.load(sys.stdin):
    try:
        out.append(str(int(s)))
    except ValueError:
        out.append(None)
print(json.dumps(out))`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want []*string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("python3's output %q: %v", out, err)
	}
	for i, s := range looseInputs {
		got, ok := appendPyInt(nil, []byte(s))
		if ok != (want[i] != nil) || ok && string(appendNumberKey(nil, got)) != string(appendNumberKey(nil, []byte(*want[i]))) {
			t.Errorf("appendPyInt(%q) = %q, %v; python says %v", s, got, ok, fmtp(want[i]))
		}
	}
}

func TestDigitValueEveryScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed: %v", err)
	}
	// Python's unicodedata is the reference for every decimal digit.
	out, err := exec.Command(py, "-c", `
import sys, unicodedata, json
print(json.dumps([[c, unicodedata.decimal(chr(c))] for c in range(sys.maxunicode+1) if unicodedata.category(chr(c)) == "Nd"]))`).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want [][2]int
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, w := range want {
		r := rune(w[0])
		if !strings.ContainsRune(string(r), r) {
			continue
		}
		d, ok := digitValue(r)
		// Go's and Python's Unicode versions may differ at the newest
		// scripts; a digit Go does not know is not one to it.
		if !ok {
			continue
		}
		checked++
		if d != w[1] {
			t.Errorf("digitValue(U+%04X) = %d; python says %d", r, d, w[1])
		}
	}
	if checked < 600 {
		t.Errorf("checked %d digits; want every script's (over 600)", checked)
	}
}

func TestLooseKeys(t *testing.T) {
	tests := []struct {
		id   string // the id as JSON
		want string // the loose keys, space-separated
	}{
		{`1`, ""},
		{`1.0`, ""},
		{`1.5`, "n1e0"},
		{`-0.5`, "n0"},
		{`9007199254740993`, "n9007199254740992e15"},
		{`1e400`, ""},
		{`"1"`, "n1e0"},
		{`" 1 "`, "n1e0"},
		{`"0x1"`, "n1e0"},
		{`"1e0"`, "n1e0"},
		{`""`, "n0"},
		{`"1_0"`, "n1e1"},
		{`"٣"`, "n3e0"},
		{`"abc"`, ""},
		{`"1.5"`, "n15e0"},
		{`null`, ""},
		{`true`, ""},
	}
	var c Classifier
	var f Frame
	var buf []byte
	for _, tt := range tests {
		c.Classify([]byte(`{"id":`+tt.id+`,"result":{}}`), &f)
		id := &f.Msgs[0].ID
		var keys []string
		buf = id.LooseKeys(buf, func(k []byte) { keys = append(keys, string(k)) })
		if got := strings.Join(keys, " "); got != tt.want {
			t.Errorf("LooseKeys(%s) = %q; want %q", tt.id, got, tt.want)
		}
	}
}
