package tools

// jsonObject writes a JSON envelope field by field, so rows already encoded by
// the streaming codec are spliced in as raw bytes instead of re-marshalled.

import (
	"encoding/json"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
)

// jsonObject writes a JSON object member by member, so that pre-encoded rows
// are copied once instead of being decoded and encoded again.
type jsonObject struct {
	b []byte
	n int
}

func newJSONObject() *jsonObject { return &jsonObject{b: append(make([]byte, 0, 256), '{')} }

func (o *jsonObject) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = jsonenc.AppendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) {
	o.key(k)
	o.b = jsonenc.AppendString(o.b, v)
}

func (o *jsonObject) val(k string, v any) {
	o.key(k)
	b, err := jsonenc.Marshal(v)
	if err != nil {
		b = []byte("null")
	}
	o.b = append(o.b, b...)
}

func (o *jsonObject) raw(k string, v []byte) {
	o.key(k)
	if len(v) == 0 {
		v = []byte("null")
	}
	o.b = append(o.b, v...)
}

func (o *jsonObject) done() json.RawMessage {
	return json.RawMessage(append(o.b, '}'))
}
