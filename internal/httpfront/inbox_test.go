package httpfront

import (
	"errors"
	"io"
	"testing"
)

// TestInbox: the lines put are read in order, across reads of any size;
// a line's count is given back once it is read whole, never before, or
// when it is dropped; the reader gets what was put before the writer's
// end, then that end; a put after either side closed fails with errEnded
// and gives its count back; closing the reader's side wakes a Read that
// waits.
func TestInbox(t *testing.T) {
	type step struct {
		op   string // put, read N, closeWrite, closeWriteIdle, closeRead
		arg  string // put: the line; read: the bytes wanted
		n    int    // read: the buffer's size
		err  error  // the op's error
		gave string // the lines whose counts have been given back so far, in order
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order, across reads", []step{
			{op: "put", arg: "ab\n"},
			{op: "put", arg: "cdef\n"},
			{op: "read", n: 2, arg: "ab"},
			{op: "read", n: 4, arg: "\ncde", gave: "ab\n"},
			{op: "read", n: 64, arg: "f\n", gave: "ab\ncdef\n"},
		}},
		{"one read takes several lines", []step{
			{op: "put", arg: "1\n"},
			{op: "put", arg: "2\n"},
			{op: "put", arg: "3\n"},
			{op: "read", n: 64, arg: "1\n2\n3\n", gave: "1\n2\n3\n"},
		}},
		{"EOF after what was put", []step{
			{op: "put", arg: "x\n"},
			{op: "closeWrite"},
			{op: "put", arg: "late\n", err: errEnded, gave: "late\n"},
			{op: "read", n: 64, arg: "x\n", gave: "late\nx\n"},
			{op: "read", n: 64, err: io.EOF, gave: "late\nx\n"},
		}},
		{"idle after what was put", []step{
			{op: "put", arg: "x\n"},
			{op: "closeWriteIdle"},
			{op: "read", n: 64, arg: "x\n", gave: "x\n"},
			{op: "read", n: 64, err: ErrIdle, gave: "x\n"},
		}},
		{"reader gone: the unread dropped", []step{
			{op: "put", arg: "ab\n"},
			{op: "put", arg: "cd\n"},
			{op: "read", n: 1, arg: "a"},
			{op: "closeRead", gave: "ab\ncd\n"},
			{op: "put", arg: "ef\n", err: errEnded, gave: "ab\ncd\nef\n"},
			{op: "read", n: 64, err: io.ErrClosedPipe, gave: "ab\ncd\nef\n"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := newInbox()
			gave := ""
			for i, s := range tc.steps {
				var err error
				switch s.op {
				case "put":
					line := s.arg
					err = in.put([]byte(line), func() { gave += line })
				case "read":
					buf := make([]byte, s.n)
					var n int
					n, err = in.Read(buf)
					if string(buf[:n]) != s.arg {
						t.Fatalf("step %d: read %q; want %q", i, buf[:n], s.arg)
					}
				case "closeWrite":
					in.closeWrite(nil)
				case "closeWriteIdle":
					in.closeWrite(ErrIdle)
				case "closeRead":
					in.closeRead()
				}
				if !errors.Is(err, s.err) || (err == nil) != (s.err == nil) {
					t.Fatalf("step %d (%s): error %v; want %v", i, s.op, err, s.err)
				}
				if gave != s.gave {
					t.Fatalf("step %d (%s): counts given back for %q; want %q", i, s.op, gave, s.gave)
				}
			}
		})
	}
}

// TestInboxWakes: a Read waiting for a line returns once one is put, and
// a Read waiting when the reader's side closes returns io.ErrClosedPipe.
func TestInboxWakes(t *testing.T) {
	in := newInbox()
	got := make(chan string)
	go func() {
		buf := make([]byte, 16)
		n, _ := in.Read(buf)
		got <- string(buf[:n])
		_, err := in.Read(buf)
		got <- err.Error()
	}()
	if err := in.put([]byte("hello\n"), nil); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "hello\n" {
		t.Fatalf("read %q; want the line put", s)
	}
	in.closeRead()
	if s := <-got; s != io.ErrClosedPipe.Error() {
		t.Fatalf("a Read waiting as the reader's side closed: %q; want %v", s, io.ErrClosedPipe)
	}
}

// TestInboxBoundedBehind: a reader that reads part of a line each time,
// so that the inbox never empties, while lines keep being put, holds no
// more lines than twice those it has not read (and compactAt).
func TestInboxBoundedBehind(t *testing.T) {
	in := newInbox()
	line := []byte("0123456789\n")
	buf := make([]byte, len(line)-1) // never a whole line's worth: the inbox never drains
	for i := range 10000 {
		if err := in.put(line, nil); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := in.put(line, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := in.Read(buf); err != nil {
			t.Fatal(err)
		}
		in.mu.Lock()
		held, unread := len(in.segs), len(in.segs)-in.first
		in.mu.Unlock()
		if held > 2*unread+compactAt {
			t.Fatalf("after %d puts: %d lines held for %d not read whole; want at most %d", i, held, unread, 2*unread+compactAt)
		}
	}
}
