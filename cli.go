package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/parse-mcp/parse-mcp/internal/app"
	"github.com/parse-mcp/parse-mcp/server"
)

// runCommand runs a one-shot operator command.
func runCommand(ctx context.Context, a *app.App, cmd []string, stdout, stderr io.Writer) int {
	switch cmd[0] {
	case "call":
		return callTool(ctx, a, cmd, stdout, stderr)
	case "describe":
		schema, err := a.Store.Schema.Get(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "parse-mcp: reading _SCHEMA: %v\n", err)
			return exitFailure
		}
		return printJSON(stdout, a.Deps.Policy.Describe(schema))
	case "would-permit":
		class := ""
		if len(cmd) == 3 {
			class = cmd[2]
		}
		schema, err := a.Store.Schema.Get(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "parse-mcp: reading _SCHEMA: %v\n", err)
			return exitFailure
		}
		verdict := a.Deps.Policy.WouldPermit(ctx, schema, cmd[1], class)
		printJSON(stdout, verdict)
		if !verdict.Allowed {
			return exitFailure
		}
		return exitOK
	case "embed":
		return runEmbed(ctx, a, cmd, stderr)
	case "audit":
		schema, err := a.Store.Schema.Get(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "parse-mcp: reading _SCHEMA: %v\n", err)
			return exitFailure
		}
		report := a.Deps.Policy.Audit(ctx, schema)
		printJSON(stdout, report)
		if ok, _ := report["ok"].(bool); !ok {
			return exitFailure
		}
		return exitOK
	}
	return exitBadUsage
}

// callTool runs one tool through the same dispatcher, policy and envelope as
// an MCP client would, and prints the result as pretty JSON: the structured
// result on success (exit 0), the error text and code on a tool error (exit 1).
func callTool(ctx context.Context, a *app.App, cmd []string, stdout, stderr io.Writer) int {
	args := json.RawMessage("{}")
	if len(cmd) == 3 {
		if !json.Valid([]byte(cmd[2])) || bytes.TrimSpace([]byte(cmd[2]))[0] != '{' {
			fmt.Fprintf(stderr, "parse-mcp: call: the arguments must be a JSON object, e.g. '{\"class_name\":\"Song\"}'\n")
			return exitBadUsage
		}
		args = json.RawMessage(cmd[2])
	}
	sess := server.NewSession("cli")
	d := a.Dispatcher
	// At a terminal the operator is the person a confirmation asks: the CLI
	// declares elicitation like a desktop client and answers the server's
	// question (elicitation/create) from the terminal, so the write runs
	// through the same confirmation path, binding and audit as over MCP.
	// Piped or scripted, nobody can answer: no elicitation is declared and
	// such a write is refused with confirmation_unavailable.
	capabilities, answer := terminalConfirmation(stderr)
	var sink func([]byte)
	sink = func(msg []byte) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		}
		if answer == nil || json.Unmarshal(msg, &m) != nil || m.Method != "elicitation/create" || len(m.ID) == 0 {
			return
		}
		// The tool call waits for this reply inside d.Handle: answer from
		// another goroutine.
		go func() {
			result := map[string]any{"action": "decline"}
			if answer(m.Params.Message) {
				result = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
			}
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
			d.Handle(ctx, sess, reply, sink)
		}()
	}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + capabilities + `,"clientInfo":{"name":"parse-mcp-cli","version":"1"}}}`
	d.Handle(ctx, sess, []byte(init), func([]byte) {})
	d.Handle(ctx, sess, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), func([]byte) {})
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": cmd[1], "arguments": args}})
	resp := d.Handle(ctx, sess, req, sink)
	return printCallResponse(resp, cmd[1], stdout, stderr)
}

// printCallResponse prints a tools/call response for `call` and returns the
// exit code.
func printCallResponse(resp []byte, tool string, stdout, stderr io.Writer) int {
	var msg struct {
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
			Meta              map[string]any  `json:"_meta"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp, &msg); err != nil {
		fmt.Fprintf(stderr, "parse-mcp: call: unreadable response\n")
		return exitFailure
	}
	switch {
	case msg.Error != nil:
		if msg.Error.Message == "tool '"+tool+"' not found" || msg.Error.Code == -32602 && bytes.Contains(resp, []byte("not found")) {
			fmt.Fprintf(stderr, "parse-mcp: call: no tool %q is available with this configuration (see `parse-mcp call list_tools`)\n", tool)
			return exitFailure
		}
		printJSON(stdout, map[string]any{"error": map[string]any{"code": msg.Error.Code, "message": msg.Error.Message}})
		return exitFailure
	case msg.Result == nil:
		return exitFailure
	case msg.Result.IsError:
		text := ""
		if len(msg.Result.Content) > 0 {
			text = msg.Result.Content[0].Text
		}
		printJSON(stdout, map[string]any{"error": text, "_meta": msg.Result.Meta})
		if bytes.Contains(resp, []byte(`"confirmation_unavailable"`)) {
			// The server's text speaks to an MCP client ("a client with
			// elicitation"); the person at this CLI has other ways out.
			fmt.Fprintln(stderr, `parse-mcp: call: this write needs a person's confirmation and the input is not a terminal: run the command at a terminal (it asks [y/N]), or add "dry_run": true to the arguments to see what it would change`)
		}
		return exitFailure
	}
	raw := []byte(msg.Result.StructuredContent)
	if len(raw) == 0 && len(msg.Result.Content) > 0 {
		raw = []byte(msg.Result.Content[0].Text)
	}
	// Indent the bytes as they are: re-marshalling through a map would sort
	// the keys and lose the row order (objectId, createdAt, updatedAt first).
	out, err := indentResult(raw)
	if err != nil {
		fmt.Fprintln(stdout, string(unescapeHTML(raw)))
		return exitOK
	}
	fmt.Fprintln(stdout, string(unescapeHTML(out)))
	return exitOK
}

// terminalConfirmation is what `call` declares and how it answers a
// confirmation: at a terminal, elicitation, asked on stderr and answered
// on stdin; piped, nothing (answer is nil).
func terminalConfirmation(stderr io.Writer) (capabilities string, answer func(message string) bool) {
	capabilities = `{}`
	if stdin, ok := stdinTerminal(); ok {
		capabilities = `{"elicitation":{}}`
		in := bufio.NewReader(stdin)
		answer = func(message string) bool {
			// The question quotes values from the database: stderr is run's,
			// through the terminal filter.
			fmt.Fprint(stderr, message)
			fmt.Fprint(stderr, " [y/N] ")
			line, _ := in.ReadString('\n')
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "y", "yes":
				return true
			}
			return false
		}
	}
	return capabilities, answer
}

// stdinTerminal is the standard input when it is a terminal a person types
// at.
func stdinTerminal() (io.Reader, bool) {
	return os.Stdin, term.IsTerminal(int(os.Stdin.Fd()))
}

// indentResult indents a tool result for a person, keeping its member order,
// with `columns` on one line and each of `rows` on a line of its own (as a
// table reads), instead of one value per line.
func indentResult(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		var out bytes.Buffer
		err := json.Indent(&out, raw, "", "  ")
		return out.Bytes(), err
	}
	var obj bytes.Buffer
	obj.WriteByte('{')
	lines := map[string]string{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := k.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if obj.Len() > 1 {
			obj.WriteByte(',')
		}
		kb, _ := json.Marshal(key)
		obj.Write(kb)
		obj.WriteByte(':')
		var rows []json.RawMessage
		if (key == "rows" || key == "columns") && json.Unmarshal(v, &rows) == nil {
			placeholder := fmt.Sprintf("\x00%s\x00", key)
			var b bytes.Buffer
			if key == "columns" {
				_ = json.Compact(&b, v)
			} else {
				b.WriteByte('[')
				for i, r := range rows {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString("\n    ")
					_ = json.Compact(&b, r)
				}
				if len(rows) > 0 {
					b.WriteString("\n  ")
				}
				b.WriteByte(']')
			}
			lines[placeholder] = b.String()
			pb, _ := json.Marshal(placeholder)
			obj.Write(pb)
			continue
		}
		obj.Write(v)
	}
	obj.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, obj.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	b := out.Bytes()
	for placeholder, text := range lines {
		pb, _ := json.Marshal(placeholder)
		b = bytes.Replace(b, pb, []byte(text), 1)
	}
	return b, nil
}

func printJSON(w io.Writer, v any) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitFailure
	}
	_, _ = w.Write(b.Bytes())
	return exitOK
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes that Go's JSON
// encoder writes for <, > and & back into the characters, so a person reading
// the CLI's output sees "<" rather than "\u003c". The JSON stays valid: those
// characters need no escaping, and an escaped backslash followed by "u003c"
// (the literal text) is left alone.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c", "003C":
				out = append(out, '<')
				i += 5
				continue
			case "003e", "003E":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		// Any other escape (including \\) is copied whole, so its second
		// character is never read as the start of an escape.
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}
