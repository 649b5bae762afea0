package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestWrapBadBatchSetting: wrap with telemetry asked for and an
// OTEL_BSP_* variable that is not a whole number in range stops before
// the child starts, with a usage error naming the variable and its
// value, and writes no log.
func TestWrapBadBatchSetting(t *testing.T) {
	f := newFixture(t)
	for _, kv := range []string{"OTEL_BSP_SCHEDULE_DELAY=5s", "OTEL_BSP_MAX_QUEUE_SIZE=-3", "OTEL_BSP_EXPORT_TIMEOUT=0"} {
		cmd := f.wrapCmd(nil, child("echo")...)
		// Nothing listens at port 1: a run that got past the settings
		// would start, record and say its spans were not exported.
		cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", kv)
		cmd.Stdin = strings.NewReader(call("1", "read_file") + "\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runBounded(t, cmd, 30*time.Second)
		name, value, _ := strings.Cut(kv, "=")
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "wrap: telemetry: ") ||
			!strings.Contains(stderr.String(), name+`="`+value+`"`) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and the variable named", kv, code, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: the child answered %q; want it never started", kv, stdout.String())
		}
		if _, err := os.Stat(f.audit); !os.IsNotExist(err) {
			t.Errorf("%s: the log %s exists (%v); want none written", kv, f.audit, err)
		}
	}
}
