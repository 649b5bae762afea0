package httpfront

import "net/http"

// paramMismatch checks the Mcp-Param-* headers of a tools/call.
func (ss *session) paramMismatch(r *http.Request, v *view) string {
	return ""
}
