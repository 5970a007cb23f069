// Package jsonenc encodes JSON that becomes text a model reads: tool results
// (the text content is this JSON, as a string) and the write plans shown in
// them. It is compact and not HTML-escaped: "\u003c" inside that text stays
// six characters after the client decodes the message, costing tokens where
// "<" costs one. (The JSON-RPC framing around it may escape as it likes: a
// client decodes that layer, so the model never sees its escapes.)
package jsonenc

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Marshal is json.Marshal with HTML escaping off (json.RawMessage values
// included), without the encoder's trailing newline.
//
// The encoding is written to a pooled buffer and copied out at its size:
// a fresh buffer grows through every power of two on the way to a page of
// rows, which is most of the garbage of a read (docs/performance.md "The
// driver floor, third pass"). Buffers over maxPooled are not kept.
func Marshal(v any) ([]byte, error) {
	buf := buffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooled {
			buf.Reset()
			buffers.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf) // empty: buffers are reset before they are put back
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

const maxPooled = 1 << 20

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
