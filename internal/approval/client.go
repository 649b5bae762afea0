package approval

import (
	"errors"
	"fmt"
)

// ErrNoSuchCall is Decide's answer when no socket holds the id.
var ErrNoSuchCall = errors.New("no call awaits approval under this id")

// List asks every socket in socks for the calls that wait there. A socket
// no wrap serves any more is passed over when skipGone (a listing of the
// state folder finds the sockets of killed wraps); every other failure is
// in errs, one per socket, and the other sockets are still asked.
func List(socks []string, skipGone bool) (all []Pending, errs []error) {
	for _, s := range socks {
		resp, err := Do(s, Request{Op: "list"})
		switch {
		case skipGone && notServed(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
			continue
		}
		all = append(all, resp.Pending...)
	}
	return all, errs
}

// Decide sends req (approve or deny) to the sockets in socks in turn
// until one holds its id: the wraps other than the one parking the call
// answer that they know no such id. A socket no wrap serves is passed
// over when skipGone; any other failure ends the search. ErrNoSuchCall
// when none holds it.
func Decide(socks []string, req Request, skipGone bool) error {
	for _, s := range socks {
		_, err := Do(s, req)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrRemoteUnknown), skipGone && notServed(err):
			continue
		default:
			return err
		}
	}
	return ErrNoSuchCall
}

// notServed tells a socket no wrap serves any more from an answer.
func notServed(err error) bool {
	var ns *NotServedError
	return errors.As(err, &ns)
}
