package policy

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// A glob is a compiled tool pattern. Its language is deliberately small:
//
//	'*'   any run of characters, '/' and '.' included (tool names are not paths)
//	'?'   exactly one character (one Unicode code point)
//	'\c'  the character c itself ('\*' is a literal '*')
//
// Everything else stands for itself, compared byte for byte with the decoded
// tool name: matching is case-sensitive and does no Unicode normalisation,
// as MCP servers look tools up. '[', ']', '{' and '}' are reserved, so that
// a class or an alternation written for another glob dialect is an error
// rather than a literal that silently never matches. A pattern with no
// unescaped '*' or '?' is an exact name.
type glob struct {
	items []item
	exact bool
	// lit is the whole name of an exact pattern; for a glob, the literal
	// bytes before its first wildcard (prefix) and after its last (suffix),
	// which index it (see index.go).
	lit, prefix, suffix string
}

type itemKind uint8

const (
	itemLit  itemKind = iota // lit, one or more characters
	itemOne                  // ?
	itemStar                 // *
)

type item struct {
	kind itemKind
	lit  string
}

// Reasons a pattern is not a glob; each is reported with the pattern's
// position in the file.
var (
	errGlobEmpty    = errors.New("empty tool pattern")
	errGlobUTF8     = errors.New("tool pattern is not valid UTF-8")
	errGlobControl  = errors.New("tool pattern contains a control character")
	errGlobReserved = errors.New(`tool pattern uses a reserved character ('[', ']', '{' or '}'; escape it with '\' to mean itself)`)
	errGlobEscape   = errors.New(`tool pattern ends with an unfinished escape '\'`)
	errGlobBadChars = errors.New("tool pattern contains U+0000 or U+FFFD, which no well-formed call can name")
)

// compileGlob compiles a pattern.
func compileGlob(pat string) (glob, error) {
	var g glob
	switch {
	case pat == "":
		return g, errGlobEmpty
	case !utf8.ValidString(pat):
		return g, errGlobUTF8
	case strings.ContainsRune(pat, utf8.RuneError):
		return g, errGlobBadChars
	}
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			g.items = append(g.items, item{kind: itemLit, lit: string(lit)})
			lit = lit[:0]
		}
	}
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == 0:
			return g, errGlobBadChars
		case c < 0x20 || c == 0x7f:
			return g, errGlobControl
		case c == '[' || c == ']' || c == '{' || c == '}':
			return g, errGlobReserved
		case c == '\\':
			if i+1 == len(pat) {
				return g, errGlobEscape
			}
			_, w := utf8.DecodeRuneInString(pat[i+1:])
			if pat[i+1] < 0x20 || pat[i+1] == 0x7f {
				return g, errGlobControl
			}
			lit = append(lit, pat[i+1:i+1+w]...)
			i += w
		case c == '*':
			flush()
			if n := len(g.items); n == 0 || g.items[n-1].kind != itemStar {
				g.items = append(g.items, item{kind: itemStar}) // ** is *
			}
		case c == '?':
			flush()
			g.items = append(g.items, item{kind: itemOne})
		default:
			lit = append(lit, c)
		}
	}
	flush()
	if len(g.items) == 1 && g.items[0].kind == itemLit {
		g.exact, g.lit = true, g.items[0].lit
		return g, nil
	}
	if g.items[0].kind == itemLit {
		g.prefix = g.items[0].lit
	}
	if last := g.items[len(g.items)-1]; last.kind == itemLit {
		g.suffix = last.lit
	}
	return g, nil
}

// match reports whether the glob matches name. It runs in O(len(name) ×
// len(items)) time at worst and allocates nothing.
func (g *glob) match(name []byte) bool {
	if g.exact {
		return string(name) == g.lit
	}
	// The classic wildcard match: on a mismatch, let the last '*' seen
	// swallow one more character and retry from just after it. One
	// backtrack point suffices because '*' matches anything.
	p, s := g.items, name
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch it := &p[pi]; it.kind {
			case itemStar:
				starP, starS = pi, si
				pi++
				continue
			case itemOne:
				_, w := utf8.DecodeRune(s[si:])
				si += w
				pi++
				continue
			case itemLit:
				if n := len(it.lit); len(s)-si >= n && string(s[si:si+n]) == it.lit {
					si += len(it.lit)
					pi++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, w := utf8.DecodeRune(s[starS:])
		starS += w
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi].kind == itemStar {
		pi++
	}
	return pi == len(p)
}

// sym is one symbol of a pattern read as a word: a literal character, '?'
// or '*'. covers works on these.
type sym struct {
	kind itemKind
	r    rune
}

func (g *glob) syms() []sym {
	var out []sym
	for _, it := range g.items {
		if it.kind != itemLit {
			out = append(out, sym{kind: it.kind})
			continue
		}
		for _, r := range it.lit {
			out = append(out, sym{kind: itemLit, r: r})
		}
	}
	return out
}

// covers reports whether every name b matches, a matches too: then a rule
// with b after a rule with a can never match. It reads b as a word whose
// '*' only a's '*' can stand for and whose '?' only a's '?' or '*' can:
// sound (a "true" is always right) though not complete (b = "?*?" under
// a = "??*" is missed), which is all a diagnostic needs.
func covers(a, b *glob) bool {
	if b.exact {
		return a.match([]byte(b.lit))
	}
	if a.exact {
		return false // b matches more than one name
	}
	if !strings.HasPrefix(b.prefix, a.prefix) && !strings.HasPrefix(a.prefix, b.prefix) {
		return false
	}
	p, s := a.syms(), b.syms()
	eq := func(x, y sym) bool {
		switch x.kind {
		case itemOne:
			return y.kind != itemStar
		case itemLit:
			return y.kind == itemLit && y.r == x.r
		}
		return false
	}
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			if p[pi].kind == itemStar {
				starP, starS = pi, si
				pi++
				continue
			}
			if eq(p[pi], s[si]) {
				pi++
				si++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi].kind == itemStar {
		pi++
	}
	return pi == len(p)
}
