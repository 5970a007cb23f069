//go:build unix

package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// A pipe opened in blocking mode (as a client hands stdin over) is then read
// through the runtime's poller (a read deadline works only there); one read
// through it already, a file and other readers are left as they are.
func TestPollable(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	if r.SetReadDeadline(time.Time{}) == nil {
		t.Fatal("the test pipe should start outside the poller")
	}
	pr0, restore := pollable(r, nil)
	defer restore()
	in, ok := pr0.(*os.File)
	if !ok {
		t.Fatal("a pipe: want an *os.File")
	}
	if err := in.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatalf("the pipe is not read through the poller: %v", err)
	}
	if _, err := in.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	_ = in.SetReadDeadline(time.Time{})
	fmt.Fprintln(w, "line")
	buf := make([]byte, 5)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "line\n" {
		t.Fatalf("read %q, %v", buf, err)
	}

	pr, pw, err := os.Pipe() // read through the poller from the start
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if got, _ := pollable(pr, nil); got != io.Reader(pr) || pr.SetReadDeadline(time.Time{}) != nil {
		t.Fatal("a file already read through the poller must be left as it is")
	}
	f, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, _ := pollable(f, nil); got != io.Reader(f) {
		t.Fatal("a regular file must be left as it is")
	}
	if got, _ := pollable(io.Reader(nil), nil); got != nil {
		t.Fatal("a reader that is not a file must be left as it is")
	}
}
