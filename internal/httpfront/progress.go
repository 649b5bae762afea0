package httpfront

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/aegisrelay/aegis/frame"
)

// progressKey returns the progress token a request asks for
// (params._meta.progressToken), as a key that matches the token a
// notifications/progress carries (params.progressToken) when the two are
// the same JSON value; ok false when it asks for none. Most requests
// carry no token: a line without the member's name is not decoded.
func requestProgressKey(line []byte) (key string, ok bool) {
	if !bytes.Contains(line, []byte("progressToken")) {
		return "", false
	}
	var m struct {
		Params struct {
			Meta struct {
				ProgressToken any `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return "", false
	}
	return tokenKey(m.Params.Meta.ProgressToken)
}

// notificationProgressKey is requestProgressKey's match in a line the
// child writes: the token of a notifications/progress.
func notificationProgressKey(line []byte, f *frame.Frame) (key string, ok bool) {
	if f.Kind != frame.Single || len(f.Msgs) != 1 || f.Msgs[0].Type != frame.Notification ||
		string(f.Msgs[0].Method) != "notifications/progress" {
		return "", false
	}
	var m struct {
		Params struct {
			ProgressToken any `json:"progressToken"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return "", false
	}
	return tokenKey(m.Params.ProgressToken)
}

// tokenKey is a progress token (a string or a number) as a map key; a
// long one is held as its SHA-256, as ids are (idKey).
func tokenKey(tok any) (string, bool) {
	switch tok.(type) {
	case string, float64:
		k := fmt.Sprintf("%T:%v", tok, tok)
		if len(k) > maxKey {
			sum := sha256.Sum256([]byte(k))
			k = hashedKey + string(sum[:])
		}
		return k, true
	}
	return "", false
}

// subscriptionKey is the route key of the subscriptions/listen request a
// notification the child writes belongs to: the id its
// params._meta["io.modelcontextprotocol/subscriptionId"] names, keyed as
// that request's id is (idKey), so that it matches by value as ids do.
// A line without the member's name is not decoded.
func subscriptionKey(line []byte, f *frame.Frame) (string, bool) {
	if f.Kind != frame.Single || len(f.Msgs) != 1 || f.Msgs[0].Type != frame.Notification ||
		!bytes.Contains(line, []byte("subscriptionId")) {
		return "", false
	}
	var m struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return "", false
	}
	raw := m.Params.Meta["io.modelcontextprotocol/subscriptionId"]
	if len(raw) == 0 {
		return "", false
	}
	cl := classifiers.Get().(*classifier)
	defer classifiers.Put(cl)
	probe := make([]byte, 0, len(raw)+40)
	probe = append(append(append(probe, `{"jsonrpc":"2.0","id":`...), raw...), `,"result":{}}`...)
	cl.c.Classify(probe, &cl.f)
	if cl.f.Kind != frame.Single || len(cl.f.Msgs) != 1 || cl.f.Msgs[0].ID.Key == nil || cl.f.Msgs[0].ID.Type == frame.IDNull {
		return "", false
	}
	return idKey(cl.f.Msgs[0].ID.Key), true
}
