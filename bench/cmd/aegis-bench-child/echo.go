package main

import (
	"bytes"
	"os"
)

// echo is the MCP server of every measurement. It parses only as much as
// the harness's own requests need: the id's literal and the method's
// string.
func echo(size, hold int) int {
	text := bytes.Repeat([]byte("x"), size)
	if len(text) == 0 {
		text = []byte("ok")
	}
	buf := make([]byte, 64<<10)
	var out []byte
	// buf[start:scanned] holds no '\n': a long request arriving in many
	// reads is searched once, not once per read.
	var start, scanned, end, held int
	flush := func() bool {
		if len(out) == 0 {
			return true
		}
		_, err := os.Stdout.Write(out)
		out = out[:0]
		return err == nil
	}
	for {
		if end == len(buf) {
			if start > 0 {
				end = copy(buf, buf[start:end])
				scanned -= start
				start = 0
			} else {
				buf = append(buf, make([]byte, len(buf))...)
			}
		}
		n, err := os.Stdin.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[scanned:end], '\n')
			if i < 0 {
				scanned = end
				break
			}
			line := buf[start : scanned+i]
			start = scanned + i + 1
			scanned = start
			id, method := idAndMethod(line)
			if id == nil || method == nil {
				continue
			}
			out = append(out, `{"jsonrpc":"2.0","id":`...)
			out = append(out, id...)
			switch string(method) {
			case "tools/call", "bench/big":
				out = append(out, `,"result":{"content":[{"type":"text","text":"`...)
				if hold == 0 && len(text) > 64<<10 {
					// A big answer goes out in three writes rather than
					// through a copy, so that the child's own cost stays
					// small beside what is measured.
					if !flush() {
						return 1
					}
					if _, err := os.Stdout.Write(text); err != nil {
						return 1
					}
				} else {
					out = append(out, text...)
				}
				out = append(out, "\"}]}}\n"...)
			default:
				out = append(out, ",\"result\":{}}\n"...)
			}
			held++
		}
		if start == end {
			start, scanned, end = 0, 0, 0
		}
		if hold == 0 || held >= hold {
			if !flush() {
				return 1
			}
		}
		if err != nil {
			flush()
			return 0
		}
	}
}

// idAndMethod finds the literal of "id" and the string of "method" in one
// of the harness's requests; nil when absent.
func idAndMethod(line []byte) (id, method []byte) {
	if i := bytes.Index(line, []byte(`"id":`)); i >= 0 {
		v := line[i+5:]
		j := bytes.IndexAny(v, ",}")
		if j < 0 {
			j = len(v)
		}
		id = bytes.TrimSpace(v[:j])
	}
	if i := bytes.Index(line, []byte(`"method":"`)); i >= 0 {
		v := line[i+10:]
		if j := bytes.IndexByte(v, '"'); j >= 0 {
			method = v[:j]
		}
	}
	return id, method
}
