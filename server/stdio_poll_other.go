//go:build !unix

package server

import "io"

// pollable is in as it is: only Unix pipes and sockets are switched to the
// runtime's poller (stdio_poll_unix.go).
func pollable(in io.Reader, _ io.Writer) (io.Reader, func()) { return in, func() {} }
