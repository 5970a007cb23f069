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
)

// Marshal is json.Marshal with HTML escaping off (json.RawMessage values
// included), without the encoder's trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
