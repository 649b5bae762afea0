package pin

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
	"github.com/valyala/fastjson"
)

// Fields are the members of a tool that its definition is made of, in the
// order a person reads them. Part of the pin format: a digest covers
// these and nothing else.
var Fields = [...]string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// Limits on what one tools/list answer makes aegis hold.
const (
	// MaxDepth bounds the nesting of a tool list's JSON, as checked.
	MaxDepth = 128
	// MaxListed bounds the tools of one answer that are read (their
	// definitions put in canonical form and digested); those past it
	// are named only, Ambiguous for ReasonListBound, so that they count
	// as changed.
	MaxListed = 4096
)

// Definition is one tool of a tools/list answer, as read.
type Definition struct {
	// Name is the decoded name; Ambiguous tools may have none.
	Name string
	// Canonical is the RFC 8785 form of the tool's Fields (only those
	// present); Digest its SHA-256. Both are zero for an Ambiguous tool.
	Canonical []byte
	Digest    [32]byte
	// Ambiguous is why readers may read this tool differently (a
	// duplicate key, keys that differ only in case, text some decoder
	// reads otherwise, an integer no double holds, two tools named alike),
	// "" when they cannot.
	Ambiguous string
	// Names are the names some reader may take the tool's to be: the
	// string members named "name" but for case (a key twice, a case
	// variant), Name among them when it is one.
	Names []string
}

// List is what one tools/list answer says: its tools, in answer order,
// and whether it names a next page.
type List struct {
	Tools      []Definition
	NextCursor bool
	// Ambiguous is why readers may read the answer's list itself
	// differently ("" when they cannot): then Tools is what the exact,
	// first-key reading finds, each tool marked Ambiguous, and Others the
	// names of the tools other readings find (another result, another
	// tools array, a case variant of either) that Tools does not name.
	Ambiguous string
	Others    []string
}

// Reasons a tool or a list is ambiguous. Constant text, so that an anomaly
// record quotes no peer's bytes.
const (
	ReasonDuplicateKey = "tools/list: a key appears twice in one object"
	ReasonCaseKey      = "tools/list: keys that differ only in case"
	ReasonText         = "tools/list: text some decoder reads otherwise (invalid UTF-8, a lone surrogate)"
	ReasonNumber       = "tools/list: a number decoders read differently (an integer no double holds, or out of range)"
	ReasonTwoNames     = "tools/list: two tools with one name"
	ReasonShape        = "tools/list: not a result with a tools array of objects with string names"
	ReasonDepth        = "tools/list: nested too deeply"
	// A bound met, rather than readers' disagreement: the tools involved
	// are not pinned and count as changed.
	ReasonListBound = "tools/list: more tools in one answer than aegis reads (4096): those past them count as changed"
	ReasonPinBound  = "tools/list: tools past what a pin file holds or the changed tools a wrap keeps: not pinned, counted as changed"
)

// ReadMessage reads a tools/list answer: msg is the whole JSON-RPC
// response object (the relay has judged its envelope: one id, a result).
// It never fails: what readers may read differently is reported in the
// List and its Definitions. The result's slices are its own.
func ReadMessage(msg []byte) List {
	var l List
	whole := check(msg)
	v, err := fastjson.ParseBytes(msg)
	if err != nil {
		l.Ambiguous = ReasonShape
		return l
	}
	top := keysAgreed(v)
	res := v.Get("result")
	if res == nil || res.Type() != fastjson.TypeObject {
		// Every reader finds no tools in a result that is no object,
		// unless they take another result.
		l.Ambiguous = cmp.Or(top, whole)
		if top != "" {
			l.Others = otherNames(v, nil)
		}
		return l
	}
	// A key twice, or twice but for case, in the message or its result
	// (JSON.parse takes the last, fastjson and others the first), or a
	// case variant of tools or nextCursor (Go's decoder takes it for the
	// member, JSON.parse does not): any reader may take another list,
	// whatever the tools say of themselves.
	variant := cmp.Or(top, keysAgreed(res))
	res.GetObject().Visit(func(k []byte, _ *fastjson.Value) {
		for _, f := range [...]string{"tools", "nextCursor"} {
			if string(k) != f && strings.EqualFold(string(k), f) && variant == "" {
				variant = ReasonCaseKey
			}
		}
	})
	if c := res.Get("nextCursor"); c != nil && c.Type() != fastjson.TypeNull {
		l.NextCursor = true
	}
	arr := res.Get("tools")
	switch {
	case arr == nil || arr.Type() == fastjson.TypeNull:
		// No tools member: every reader finds no tools (a strict one
		// calls the answer invalid, a lenient one an empty list), so the
		// answer lists none and is not ambiguous for that.
		l.Ambiguous = cmp.Or(variant, whole)
		if variant != "" {
			l.Others = otherNames(v, nil)
		}
		return l
	case arr.Type() != fastjson.TypeArray:
		l.Ambiguous = ReasonShape // a reader may walk what is there
		return l
	}
	items, _ := arr.Array()
	own := false // some tool is ambiguous in itself
	names := make(map[string]int, len(items))
	for i, it := range items {
		var d Definition
		if i < MaxListed {
			d = readTool(it, it.MarshalTo(nil))
			own = own || d.Ambiguous != ""
		} else {
			d = nameOnly(it)
		}
		if d.Name != "" {
			if k, ok := names[d.Name]; ok {
				l.Tools[k].ambiguous(ReasonTwoNames)
				d.ambiguous(ReasonTwoNames)
			} else {
				names[d.Name] = len(l.Tools)
			}
		}
		l.Tools = append(l.Tools, d)
	}
	if variant != "" {
		own, whole = false, variant
		l.Others = otherNames(v, l.Tools)
	}
	if whole != "" && !own {
		// What readers disagree on is outside the tools (the result's
		// own keys): any reader may take another list.
		l.Ambiguous = whole
		for i := range l.Tools {
			l.Tools[i].ambiguous(whole)
		}
	}
	return l
}

// nameOnly is a tool past MaxListed: its names, and no definition.
func nameOnly(v *fastjson.Value) Definition {
	d := Definition{Names: namesOf(v), Ambiguous: ReasonListBound}
	if n := v.Get("name"); n != nil && n.Type() == fastjson.TypeString {
		b, _ := n.StringBytes()
		d.Name = string(b)
	}
	return d
}

// namesOf returns the string members of tool object v whose key is
// "name" but for case: the names some reader may take.
func namesOf(v *fastjson.Value) []string {
	o, err := v.Object()
	if err != nil {
		return nil
	}
	var out []string
	o.Visit(func(k []byte, n *fastjson.Value) {
		if strings.EqualFold(string(k), "name") && n.Type() == fastjson.TypeString {
			b, _ := n.StringBytes()
			if !slices.Contains(out, string(b)) {
				out = append(out, string(b))
			}
		}
	})
	return out
}

// otherNames returns the names of the tools that any reading of message
// v lists (every member named result but for case, every member of it
// named tools but for case, every name of each tool) that tools does not
// name.
func otherNames(v *fastjson.Value, tools []Definition) []string {
	have := map[string]bool{}
	for _, d := range tools {
		have[d.Name] = true
		for _, n := range d.Names {
			have[n] = true
		}
	}
	var out []string
	each := func(v *fastjson.Value, key string, f func(*fastjson.Value)) {
		if o, err := v.Object(); err == nil {
			o.Visit(func(k []byte, m *fastjson.Value) {
				if strings.EqualFold(string(k), key) {
					f(m)
				}
			})
		}
	}
	each(v, "result", func(res *fastjson.Value) {
		each(res, "tools", func(arr *fastjson.Value) {
			items, _ := arr.Array()
			for _, it := range items {
				for _, n := range namesOf(it) {
					if !have[n] {
						have[n] = true
						out = append(out, n)
					}
				}
			}
		})
	})
	return out
}

// keysAgreed returns why readers may read object v's members otherwise
// (a key twice, or two keys equal but for case), "" when they cannot.
func keysAgreed(v *fastjson.Value) string {
	o, err := v.Object()
	if err != nil {
		return ""
	}
	why := ""
	seen := map[string]bool{}
	fold := map[string]bool{}
	o.Visit(func(k []byte, _ *fastjson.Value) {
		lk := strings.ToLower(string(k))
		switch {
		case why != "":
		case seen[string(k)]:
			why = ReasonDuplicateKey
		case fold[lk]:
			why = ReasonCaseKey
		}
		seen[string(k)], fold[lk] = true, true
	})
	return why
}

// ambiguous marks d as read differently for why (the first why stays).
func (d *Definition) ambiguous(why string) {
	if d.Ambiguous == "" {
		d.Ambiguous = why
	}
	d.Canonical, d.Digest = nil, [32]byte{}
}

// readTool reads one element of result.tools.
func readTool(v *fastjson.Value, raw []byte) Definition {
	d := Definition{Names: namesOf(v)}
	if why := check(raw); why != "" {
		d.Ambiguous = why
	}
	o, err := v.Object()
	if err != nil {
		d.Ambiguous = ReasonShape
		return d
	}
	if n := o.Get("name"); n != nil && n.Type() == fastjson.TypeString {
		b, _ := n.StringBytes()
		d.Name = string(b)
	} else {
		d.ambiguous(ReasonShape)
		return d
	}
	var buf []byte
	buf = append(buf, '{')
	for _, f := range Fields {
		fv := o.Get(f)
		if fv == nil {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, f)
		buf = append(buf, ':')
		buf = fv.MarshalTo(buf)
	}
	buf = append(buf, '}')
	// A case variant of a field, with or without the field itself: Go's
	// decoder matches keys without regard to case, JSON.parse exactly.
	o.Visit(func(k []byte, _ *fastjson.Value) {
		for _, f := range Fields {
			if string(k) != f && strings.EqualFold(string(k), f) && d.Ambiguous == "" {
				d.Ambiguous = ReasonCaseKey
			}
		}
	})
	if d.Ambiguous != "" {
		return d
	}
	c, err := Canonical(buf)
	if err != nil {
		d.Ambiguous = reasonOf(err)
		return d
	}
	d.Canonical, d.Digest = c, sha256.Sum256(c)
	return d
}

// Canonical returns the RFC 8785 canonical form of the JSON value def.
func Canonical(def []byte) ([]byte, error) {
	if why := check(def); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrAmbiguous, why)
	}
	c, err := jcs.Transform(def)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAmbiguous, err)
	}
	return c, nil
}

// reasonOf is the constant reason of Canonical's error.
func reasonOf(err error) string {
	s := err.Error()
	for _, r := range [...]string{ReasonDuplicateKey, ReasonCaseKey, ReasonText, ReasonNumber, ReasonDepth} {
		if strings.Contains(s, r) {
			return r
		}
	}
	switch {
	case strings.Contains(s, "Duplicate key"):
		return ReasonDuplicateKey
	case strings.Contains(s, "UTF-8"), strings.Contains(s, "surrogate"):
		return ReasonText
	case strings.Contains(s, "Number"), strings.Contains(s, "number"):
		return ReasonNumber
	}
	return ReasonShape
}

// check walks the JSON value data token by token with encoding/json and
// returns why some reader may read it otherwise: a key twice in one
// object, two keys equal but for case, invalid UTF-8 or a lone surrogate
// escape in a string, an integer beyond what a double holds exactly (a
// reader with 64-bit integers or decimals reads another value than
// JSON.parse), nesting deeper than MaxDepth; "" when none.
func check(data []byte) string { return checkFold(data, true) }

// checkFold is check, keys that differ only in case passed over unless
// fold.
func checkFold(data []byte, fold bool) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		obj  bool
		key  bool // the next string token is a key
		keys map[string]bool
		fold map[string]bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return ReasonShape
		}
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].obj && stack[top].key
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top >= 0 && stack[top].obj {
					stack[top].key = true
				}
				if len(stack) >= MaxDepth {
					return ReasonDepth
				}
				stack = append(stack, frame{obj: t == '{', key: t == '{'})
			default:
				stack = stack[:top]
			}
			continue
		case string:
			if !textAgreed(t) {
				return ReasonText
			}
			if isKey {
				f := &stack[top]
				if f.keys == nil {
					f.keys, f.fold = map[string]bool{}, map[string]bool{}
				}
				if f.keys[t] {
					return ReasonDuplicateKey
				}
				lk := strings.ToLower(t)
				if fold && f.fold[lk] {
					return ReasonCaseKey
				}
				f.keys[t], f.fold[lk] = true, true
				f.key = false
				continue
			}
		case json.Number:
			if !numberAgreed(string(t)) {
				return ReasonNumber
			}
		}
		if top >= 0 && stack[top].obj {
			stack[top].key = true
		}
	}
}

// textAgreed reports whether every decoder reads s, a decoded string, the
// same: encoding/json turns invalid UTF-8 and lone surrogate escapes into
// U+FFFD, which other decoders keep, reject or pass on as they are.
func textAgreed(s string) bool { return !strings.ContainsRune(s, '\uFFFD') }

// numberAgreed reports whether every decoder reads the number literal s
// as one value: a double (JSON.parse) and an exact integer (Go's int64,
// Python's int) agree on the integers a double holds exactly, and every
// reader takes a fraction or an exponent as the nearest double.
func numberAgreed(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false // out of range: JSON.parse makes it Infinity
	}
	if strings.ContainsAny(s, ".eE") {
		return true
	}
	i, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return false
	}
	_, acc := new(big.Float).SetInt(i).Float64()
	return acc == big.Exact
}
