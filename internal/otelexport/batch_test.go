package otelexport

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBatchSettings: the span queue, batch, delay and export timeout are
// Config's when it sets them, else the OTEL_BSP_* variables', else the
// defaults (the specification's delay of 5 s); a batch larger than the
// queue is the queue; a value that is not a whole number in range is
// refused, naming the variable.
func TestBatchSettings(t *testing.T) {
	type got struct {
		queue, batch   int
		delay, timeout time.Duration
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want got
		bad  string // the variable the error names
	}{
		{name: "defaults", want: got{DefaultQueueSpans, DefaultBatch, 5 * time.Second, DefaultExportTimeout}},
		{name: "env", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": " 10 ",
			"OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_EXPORT_TIMEOUT": "1500"},
			want: got{100, 10, 250 * time.Millisecond, 1500 * time.Millisecond}},
		{name: "zero delay reads at once", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "0"},
			want: got{DefaultQueueSpans, DefaultBatch, 0, DefaultExportTimeout}},
		{name: "batch past the queue", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "64"},
			want: got{64, 64, DefaultDelay, DefaultExportTimeout}},
		{name: "config over env", cfg: Config{QueueSpans: 7, Batch: 3, Delay: time.Millisecond, ExportTimeout: time.Second},
			env:  map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "10", "OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_EXPORT_TIMEOUT": "x"},
			want: got{7, 3, time.Millisecond, time.Second}},
		{name: "unit", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "5s"}, bad: "OTEL_BSP_SCHEDULE_DELAY"},
		{name: "negative", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "-1"}, bad: "OTEL_BSP_SCHEDULE_DELAY"},
		{name: "zero queue", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, bad: "OTEL_BSP_MAX_QUEUE_SIZE"},
		{name: "zero batch", env: map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "0"}, bad: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"},
		{name: "zero timeout", env: map[string]string{"OTEL_BSP_EXPORT_TIMEOUT": "0"}, bad: "OTEL_BSP_EXPORT_TIMEOUT"},
		{name: "past 2^31", env: map[string]string{"OTEL_BSP_EXPORT_TIMEOUT": "2147483648"}, bad: "OTEL_BSP_EXPORT_TIMEOUT"},
		{name: "fraction", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "1.5"}, bad: "OTEL_BSP_MAX_QUEUE_SIZE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Getenv = func(k string) string { return tc.env[k] }
			err := batchSettings(&cfg)
			if tc.bad != "" {
				if !errors.Is(err, ErrBatchSetting) || !strings.Contains(err.Error(), tc.bad+"=") {
					t.Fatalf("batchSettings: %v; want ErrBatchSetting naming %s", err, tc.bad)
				}
				// Start refuses it too, before it makes anything.
				env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
				for k, v := range tc.env {
					env[k] = v
				}
				if e, err := Start(Config{Getenv: func(k string) string { return env[k] }}); e != nil || !errors.Is(err, ErrBatchSetting) {
					t.Fatalf("Start = %v, %v; want ErrBatchSetting", e, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := (got{cfg.QueueSpans, cfg.Batch, cfg.Delay, cfg.ExportTimeout}); g != tc.want {
				t.Fatalf("queue, batch, delay, timeout = %+v; want %+v", g, tc.want)
			}
		})
	}
}

// TestScheduleDelay: a reading waits OTEL_BSP_SCHEDULE_DELAY after the
// first group into an empty queue. Two exporters are tapped the same
// call: the one whose delay is zero builds its span with the run still
// going, while the one whose delay is an hour has built none by then;
// Close reads and exports it.
func TestScheduleDelay(t *testing.T) {
	c := newCallLines(t)
	start := func(delay string) (*Exporter, *recorder) {
		rec := &recorder{}
		e, err := Start(Config{Client: rec, Getenv: func(k string) string {
			if k == "OTEL_BSP_SCHEDULE_DELAY" {
				return delay
			}
			return ""
		}})
		if err != nil {
			t.Fatal(err)
		}
		return e, rec
	}
	now, nowRec := start("0")
	later, laterRec := start("3600000")
	for _, e := range []*Exporter{now, later} {
		e.Tap(c.head)
		e.Tap(c.line(0, false))
		e.Tap(c.line(0, true))
	}
	for deadline := time.Now().Add(30 * time.Second); now.Stats().Exported < 1; {
		if time.Now().After(deadline) {
			t.Fatalf("with OTEL_BSP_SCHEDULE_DELAY=0, no span exported in 30 s: %+v", now.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := later.Stats(); s.Spans != 0 {
		t.Fatalf("with OTEL_BSP_SCHEDULE_DELAY=3600000, %d spans built before the delay", s.Spans)
	}
	for _, e := range []*Exporter{now, later} {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(nowRec.got) != 1 || len(laterRec.got) != 1 {
		t.Fatalf("spans exported: %d and %d; want 1 each", len(nowRec.got), len(laterRec.got))
	}
}
