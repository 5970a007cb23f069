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
// a file is left as it is (a terminal's mode is shared with the shell).
func pollable(in io.Reader) io.Reader {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	if f.SetReadDeadline(time.Time{}) == nil {
		return in // read through the poller already
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return in
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return in
	}
	return os.NewFile(uintptr(fd), f.Name())
}
