//go:build unix

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

const initializeLine = `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"

// bigServer has one tool, "big", whose result is 2 MB of text: more than a
// socket's buffer holds.
func bigServer() *Dispatcher {
	s := mcpserver.NewMCPServer("big-test", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("big"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("x", 2<<20)), nil
	})
	return NewDispatcher(s, 4, zerolog.Nop())
}

// stdin and stdout can be one socket (inetd, systemd's StandardInput=socket,
// socat EXEC): O_NONBLOCK belongs to the socket's open file description, so
// making stdin non-blocking would make stdout's blocking writes fail with
// EAGAIN as soon as the client reads slower than the server writes, and the
// answer would be cut off.
func TestStdioStdinAndStdoutOneSocket(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	outFD, err := syscall.Dup(fds[0]) // stdout: the same description as stdin
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(fds[1], true); err != nil { // the client's end: read deadlines
		t.Fatal(err)
	}
	in, out := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(outFD), "stdout")
	client := os.NewFile(uintptr(fds[1]), "client")
	defer in.Close()
	defer out.Close()
	defer client.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, bigServer(), in, out, StdioOptions{}) }()
	defer func() { cancel(); _ = syscall.Shutdown(fds[1], syscall.SHUT_WR); <-done }()

	if _, err := client.WriteString(initializeLine + `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"big","arguments":{}}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a slow client: the socket's buffer fills
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReaderSize(client, 4<<20)
	for _, id := range []string{"i", "big"} {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("response %q: %v after %d bytes", id, err, len(line))
		}
		var m struct {
			ID     string `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(line, &m); err != nil || m.ID != id {
			t.Fatalf("response %q: %d bytes, %v", id, len(line), err)
		}
		if id == "big" && (len(m.Result.Content) != 1 || len(m.Result.Content[0].Text) != 2<<20) {
			t.Fatalf("the big result was cut: %d bytes", len(line))
		}
	}
}

// ServeStdio leaves the caller's stdin as it found it: still open (another
// *os.File over the same descriptor, once unreachable, would close it) and
// blocking again (O_NONBLOCK is shared with every process holding the pipe,
// such as a parent that handed its own stdin over).
func TestStdioLeavesStdinAsFound(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	in, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "w")
	defer in.Close()
	if _, err := w.WriteString(initializeLine); err != nil {
		t.Fatal(err)
	}
	w.Close() // EOF after one request
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if err := ServeStdio(context.Background(), bigServer(), in, outW, StdioOptions{}); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // finalizers run on their own goroutine
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fds[0]), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatalf("stdin's descriptor after serving: %v", errno)
	}
	if flags&syscall.O_NONBLOCK != 0 {
		t.Fatal("stdin left non-blocking after serving")
	}
}
