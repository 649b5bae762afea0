package main

import (
	"flag"

	"github.com/aegisrelay/aegis/internal/httpfront"
	"github.com/aegisrelay/aegis/internal/serve"
)

// addListenFlags adds wrap's flags for serving MCP Streamable HTTP
// (--listen): one child per MCP session, each recorded as a session of
// its own in the one log (serve.Front, package httpfront).
func addListenFlags(fs *flag.FlagSet) *serve.Front {
	f := &serve.Front{}
	fs.StringVar(&f.Addr, "listen", "", "serve MCP Streamable HTTP at http://`ADDR`/mcp instead of stdio: 127.0.0.1:PORT, [::1]:PORT, HOST:PORT or unix:PATH; one child per session (PORT 0: any free port, printed)")
	fs.StringVar(&f.Auth, "auth", "token", "with --listen: token (a bearer token made at start, in --token-file) or none (loopback and unix sockets only)")
	fs.StringVar(&f.TokenFile, "token-file", "", "with --listen: write the bearer token to `FILE`, mode 0600 (default: the audit log's name with .token)")
	fs.Var((*stringList)(&f.AllowOrigins), "allow-origin", "with --listen: accept requests whose Origin is `ORIGIN` (such as https://app.example.com; * any) beside the loopback ones (repeatable)")
	fs.Var((*stringList)(&f.AllowHosts), "allow-host", "with --listen: accept requests whose Host is `NAME` or NAME:PORT (* any) beside the loopback names (repeatable)")
	fs.IntVar(&f.MaxSessions, "max-sessions", httpfront.DefaultMaxSessions, "with --listen: sessions at once (the 2026-07-28 requests of one principal share one); an initialize, or a first 2026-07-28 request, beyond it is answered 503")
	fs.DurationVar(&f.IdleTimeout, "idle-timeout", httpfront.DefaultIdleTimeout, "with --listen: end a session that no request used for `D`")
	fs.IntVar(&f.MaxConns, "max-conns", httpfront.DefaultMaxConns, "with --listen: connections open at once; one beyond it takes the place of one not yet authenticated (lowered to fit the open-file limit)")
	fs.IntVar(&f.MaxConnsPerPeer, "max-conns-per-peer", httpfront.DefaultMaxConnsPerPeer, "with --listen: connections open at once from one IP address (an IPv6 /64)")
	fs.DurationVar(&f.HeaderTimeout, "header-timeout", httpfront.DefaultHeaderTimeout, "with --listen: time a connection has to send a request's headers")
	return f
}
