package clientconfig

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// bigClaudeJSON is a ~/.claude.json of n projects, each with history and
// two stdio servers: the largest file the rewrite meets in practice.
func bigClaudeJSON(n int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"numStartups\": 420,\n  \"projects\": {\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `    "/home/me/src/p%d": {
      "allowedTools": [],
      "history": [{"display": "fix the flaky test in package %d, then run the whole suite again", "pastedContents": {}}],
      "mcpServers": {
        "playwright": {"type": "stdio", "command": "npx", "args": ["@playwright/mcp@latest"], "env": {}},
        "db": {"type": "stdio", "command": "/home/me/bin/db-mcp", "args": [], "env": {"DATABASE_URL": "postgres://localhost/p%d"}}
      },
      "hasTrustDialogAccepted": true
    }`, i, i, i)
	}
	b.WriteString("\n  }\n}\n")
	return []byte(b.String())
}

// BenchmarkWrap rewrites a 1,000-project ~/.claude.json, beside
// encoding/json decoding the same bytes into a map (which keeps neither
// order nor comments) as the floor.
func BenchmarkWrap(b *testing.B) {
	src := bigClaudeJSON(1000)
	b.Run("encoding-json-map", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			var v map[string]any
			if err := json.Unmarshal(src, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wrap", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if _, err := Wrap(src, Options{Client: "c", Aegis: "/usr/local/bin/aegis"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wrap+diff", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			r, err := Wrap(src, Options{Client: "c", Aegis: "/usr/local/bin/aegis"})
			if err != nil {
				b.Fatal(err)
			}
			_ = r.Diff("a", "b")
		}
	})
}
