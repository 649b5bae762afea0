// Package egress is wrap --allow-egress's proxy: the one way a confined
// child reaches the network, by host name, with every connection
// recorded.
//
// # Grants
//
// A grant (ParseGrant) is NAME[:PORT], *.SUFFIX[:PORT] (every name
// beneath SUFFIX, not SUFFIX itself) or an IP literal[:PORT]; the port
// is 443 unless named. NAME[:PORT]=ADDR pins a name to an IP address,
// as a hosts-file line would, for a service DNS does not know or that
// is at a local or private address (a registry mirror on the machine or
// the office network): the name is never resolved, and its connections
// go to ADDR whatever kind of address it is. Names are matched in lower
// case without a trailing dot; a non-ASCII name is refused (clients
// send punycode).
//
// # Decisions
//
// The proxy serves HTTP CONNECT (a tunnel, for TLS) and plain HTTP
// requests in absolute form (http://HOST[:PORT]/…, port 80 unless
// named); anything else is answered 400. For each it:
//
//  1. matches the host and port against the grants (none: 403);
//  2. resolves the name itself (Config.Resolver), or takes an IP literal
//     only if a grant names that literal, or a pinned grant's address;
//  3. keeps the addresses the grant allows: a pinned grant its pin; a
//     literal grant its own address; a grant of localhost (or of a loopback address) loopback
//     addresses; every other grant public addresses only (Public: not
//     loopback, private, shared, link-local — the cloud metadata service
//     among them — reserved, documentation or multicast; IPv4-mapped and
//     NAT64 addresses judged by the IPv4 address they carry). None left:
//     403;
//  4. for CONNECT, answers 200, reads the TLS ClientHello with
//     crypto/tls's own parser and requires its server name to be the
//     CONNECT's host (an IP literal: no server name); a tunnel whose
//     first bytes are not a ClientHello, or that names another server,
//     is closed before anything is dialled;
//  5. dials the address it checked, never the name again, so that a
//     second DNS answer cannot move the connection (no rebinding between
//     check and connect), and splices the two sides.
//
// A plain request is sent on in origin form without Proxy-* and
// hop-by-hop headers, with Connection: close, and its response carried
// back until the server closes: one request per connection.
//
// This follows the decisions of Stripe's smokescreen (classify every
// resolved address, dial only what was classified, refuse literals
// unless granted) without its weight: smokescreen brings a goproxy
// fork, logging and metrics libraries, and its ACLs are per role, not
// per session.
//
// # Bounds
//
// At most Config.MaxConns connections at once (more are answered 503
// and recorded refused); a request head of at most MaxHeader bytes read
// within HeaderTimeout (431 or 400 otherwise), as is a ClientHello (at
// most 64 KiB); resolving and dialling within DialTimeout; a connection
// with no byte either way for IdleTimeout is closed.
//
// # Records
//
// Every connection accepted is numbered (1, 2, … in the proxy) and
// recorded (record.Egress), allowed or refused: the host and port asked
// for, the address dialled, the grant that allowed it or the reason it
// was refused, the ClientHello's server name, the bytes each way, the
// duration, and the intents of the calls in flight when it was accepted
// (Config.InFlight). A refused connection is one record, when it ends.
// An allowed one is two: its opening record, written (Config.Record
// returns once it is) after the checked address has answered and
// before any byte is carried, and its record at the end with the
// totals. A crash of aegis mid-connection so loses the totals, never
// that the connection was made; an opening record that cannot be
// written refuses the connection. Close ends every connection and
// returns once each is recorded, so that a session's egress records
// come before its session_end.
package egress
