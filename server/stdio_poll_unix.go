//go:build unix

package server

import (
	"io"
	"os"
	"syscall"
	"time"
)

// pollable returns in read through the runtime's poller when it is a pipe or
// a socket: a blocking read parks a thread in the kernel, and every request
// then costs a thread hand-off before a goroutine can run it. A terminal or
// a file is left as it is (a terminal's mode is shared with the shell), and
// so is a socket that is out too (inetd, socat EXEC): O_NONBLOCK belongs to
// the open file description, and out's blocking writes would fail with
// EAGAIN. restore gives in back as it was found: blocking, and its
// descriptor open (the poller reads a duplicate of its own).
func pollable(in io.Reader, out io.Writer) (r io.Reader, restore func()) {
	f, ok := in.(*os.File)
	if !ok || f.SetReadDeadline(time.Time{}) == nil { // not a file, or read through the poller already
		return in, func() {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return in, func() {}
	}
	if o, ok := out.(*os.File); ok {
		if ofi, err := o.Stat(); err != nil || os.SameFile(fi, ofi) {
			return in, func() {}
		}
	}
	fd := int(f.Fd())
	syscall.ForkLock.RLock()
	dup, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(dup)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return in, func() {}
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		_ = syscall.Close(dup)
		return in, func() {}
	}
	p := os.NewFile(uintptr(dup), f.Name())
	return p, func() {
		_ = p.Close() // also ends a read still waiting
		_ = syscall.SetNonblock(fd, false)
	}
}
