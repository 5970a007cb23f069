package e2e

import (
	"bytes"
	le "encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The slow link: the scratch app's server talks to the database through a
// loopback proxy that holds back, for slowDelay, every reply to a command
// naming the SlowScan collection (count, find, getMore, aggregate …). So a
// call on SlowScan is slow by construction, on any engine — the progress and
// cancellation tests no longer hope the engine is slow — while every other
// call is as fast as the engine. Cancelling a call closes its connection,
// which ends the wait at once.
//
// A real MongoDB reached over TLS or SRV (Atlas) cannot be proxied byte for
// byte: there the link is direct, and SlowScan's 8000 rows under slowRegex
// make the queries slow on the server (which the currentOp checks need
// anyway).
const slowDelay = 3 * time.Second

// slowLinkURI is the URI of the slow link to the test database (mongoURI
// when it cannot be proxied).
var slowLinkURI string

// startSlowLink starts the proxy to the server of base and returns the URI
// (with database db) that goes through it, or "" when base cannot be
// proxied.
func startSlowLink(base, db string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if u.Scheme != "mongodb" || strings.Contains(u.Host, ",") || q.Get("tls") == "true" || q.Get("ssl") == "true" {
		return "", nil
	}
	upstream := u.Host
	if !strings.Contains(upstream, ":") {
		upstream += ":27017"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	marker := []byte(scratchPrefix + slowClass)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go slowLinkConn(c, upstream, marker)
		}
	}()
	u.Host = l.Addr().String()
	u.Path = "/" + db
	q.Set("directConnection", "true") // a replica set member list must not lead around the proxy
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// slowLinkConn relays one client connection, delaying the replies to
// requests that contain marker.
func slowLinkConn(client net.Conn, upstream string, marker []byte) {
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		client.Close()
		return
	}
	closed := make(chan struct{})
	var once sync.Once
	shut := func() {
		once.Do(func() {
			close(closed)
			client.Close()
			server.Close()
		})
	}
	var mu sync.Mutex
	slow := map[int32]bool{} // request ids whose replies wait
	go func() {
		defer shut()
		for {
			msg, err := readWireMessage(client)
			if err != nil {
				return
			}
			if bytes.Contains(msg, marker) {
				mu.Lock()
				slow[int32(le.LittleEndian.Uint32(msg[4:8]))] = true
				mu.Unlock()
			}
			if _, err := server.Write(msg); err != nil {
				return
			}
		}
	}()
	go func() {
		defer shut()
		for {
			msg, err := readWireMessage(server)
			if err != nil {
				return
			}
			responseTo := int32(le.LittleEndian.Uint32(msg[8:12]))
			mu.Lock()
			wait := slow[responseTo]
			delete(slow, responseTo)
			mu.Unlock()
			if wait {
				select {
				case <-time.After(slowDelay):
				case <-closed:
					return
				}
			}
			if _, err := client.Write(msg); err != nil {
				return
			}
		}
	}()
}

// readWireMessage reads one MongoDB wire protocol message (its header's
// first int32 is the whole length).
func readWireMessage(r io.Reader) ([]byte, error) {
	var head [16]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int(le.LittleEndian.Uint32(head[:4]))
	if n < 16 || n > 64<<20 {
		return nil, fmt.Errorf("wire message of %d bytes", n)
	}
	msg := make([]byte, n)
	copy(msg, head[:])
	_, err := io.ReadFull(r, msg[16:])
	return msg, err
}
