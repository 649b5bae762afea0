package httpfront

import (
	"context"
	"errors"
	"strconv"
	"testing"
)

// TestWaitEndedSession: a request whose line cannot be put (the child's
// side has closed) is told the session ended, every time; its stream is
// finished too, which wakes its first event, and must not win.
func TestWaitEndedSession(t *testing.T) {
	srv, err := New(Config{Start: func(c *Conn) (<-chan struct{}, error) { return make(chan struct{}), nil }})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(srv, "s", &Conn{})
	s.lines.closeRead()
	for i := range 200 {
		key := strconv.Itoa(i)
		o, err := s.request(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+key+`,"method":"ping"}`), []string{key}, true, "", streamKind{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.wait(context.Background(), o); !errors.Is(err, errEnded) {
			t.Fatalf("request %d to an ended session: wait = %v; want errEnded", i, err)
		}
	}
}
