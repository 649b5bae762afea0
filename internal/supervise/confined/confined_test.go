package confined

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"github.com/aegisrelay/aegis/internal/confine"
	"github.com/aegisrelay/aegis/internal/supervise"
)

// The test binary is the helper too, as aegis is: confine.Command re-runs
// os.Executable as `__confine-exec -- argv…`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == confine.HelperCommand {
		os.Exit(confine.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestLauncher: without a profile the child is argv itself; with one it
// is the helper, whose report says what it enforced before the target
// runs.
func TestLauncher(t *testing.T) {
	if _, ok := Launcher(nil).(supervise.Exec); !ok {
		t.Errorf("Launcher(nil) = %T; want supervise.Exec", Launcher(nil))
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	prof := &confine.Profile{ExecSupport: true, BestEffort: true}
	cmd, launch, err := Launcher(prof).Command([]string{truePath}, nil)
	if runtime.GOOS != "linux" {
		// Elsewhere --confine is refused before anything starts.
		if !errors.Is(err, confine.ErrRefused) {
			t.Errorf("Command = %v; want confine.ErrRefused", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Command = %v", err)
	}
	if want := []string{confine.HelperCommand, "--", truePath}; !slices.Equal(cmd.Args[1:], want) {
		t.Errorf("Command args = %q; want %q after the binary", cmd.Args[1:], want)
	}
	if err := cmd.Start(); err != nil {
		launch.Close()
		t.Fatal(err)
	}
	launch.Started()
	rep, err := launch.Report()
	if werr := cmd.Wait(); werr != nil {
		t.Errorf("the confined child: %v", werr)
	}
	if err != nil || rep.Refused != "" || rep.ExecError != "" || rep.Enforcement == nil {
		t.Errorf("Report = %+v, %v; want an enforcement record, nothing refused", rep, err)
	}
}
