package gate_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDeps: each side of the gate imports only the machinery it uses. The
// policy decides calls and knows nothing of how they are recorded (no
// journal, no zstd) or confined (no Landlock); the relay records calls and
// knows nothing of processes (no launcher, no confinement), which package
// supervise starts and ends.
func TestDeps(t *testing.T) {
	tests := []struct {
		pkg    string
		banned []string // import paths, each with everything beneath it
	}{
		{"github.com/aegisrelay/aegis/internal/gate", []string{"github.com", "golang.org"}},
		{"github.com/aegisrelay/aegis/internal/policy", []string{
			"github.com/aegisrelay/aegis/journal", "github.com/aegisrelay/aegis/internal/relay",
			"github.com/aegisrelay/aegis/internal/confine", "github.com/klauspost/compress", "github.com/landlock-lsm",
		}},
		{"github.com/aegisrelay/aegis/internal/relay", []string{
			"github.com/aegisrelay/aegis/internal/confine", "github.com/aegisrelay/aegis/internal/supervise",
			"github.com/aegisrelay/aegis/internal/exitcode", "github.com/landlock-lsm", "os/exec",
		}},
	}
	// The go on PATH, as the other tests find it: a test binary built with
	// -trimpath (CI's) has no GOROOT of its own to look in.
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.pkg), func(t *testing.T) {
			out, err := exec.Command(gobin, "list", "-deps", tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tt.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == tt.pkg {
					continue
				}
				for _, b := range tt.banned {
					if dep == b || strings.HasPrefix(dep, b+"/") {
						t.Errorf("go list -deps %s names %s; want nothing under %s", tt.pkg, dep, b)
					}
				}
			}
		})
	}
}
