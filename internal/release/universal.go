package main

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"fmt"
	"os"
)

// sliceAlign is the alignment of each slice in a universal binary: 2^14,
// the arm64 page size (a multiple of x86_64's 4 KiB), as lipo uses.
const sliceAlign = 14

// WriteUniversal joins thin Mach-O executables into one universal ("fat")
// binary, what `lipo -create` writes: a big-endian header naming each
// slice's CPU, offset and size, then the slices, each page-aligned and
// byte-for-byte unchanged — so the ad-hoc signature the Go linker gives a
// darwin/arm64 binary stays valid. macOS runs the slice of its CPU; the
// macOS bundle thus serves Apple silicon and Intel Macs alike.
func WriteUniversal(out string, thin ...string) error {
	type slice struct {
		cpu, sub uint32
		data     []byte
		off      uint32
	}
	var slices []slice
	for _, path := range thin {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := macho.NewFile(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: not a thin Mach-O file: %w", path, err)
		}
		slices = append(slices, slice{cpu: uint32(f.Cpu), sub: f.SubCpu, data: data})
	}
	const headerSize, archSize = 8, 20
	off := uint32(headerSize + archSize*len(slices))
	for i := range slices {
		off = alignUp(off, 1<<sliceAlign)
		slices[i].off = off
		off += uint32(len(slices[i].data))
	}
	buf := make([]byte, off)
	binary.BigEndian.PutUint32(buf[0:], macho.MagicFat)
	binary.BigEndian.PutUint32(buf[4:], uint32(len(slices)))
	for i, s := range slices {
		h := buf[headerSize+archSize*i:]
		binary.BigEndian.PutUint32(h[0:], s.cpu)
		binary.BigEndian.PutUint32(h[4:], s.sub)
		binary.BigEndian.PutUint32(h[8:], s.off)
		binary.BigEndian.PutUint32(h[12:], uint32(len(s.data)))
		binary.BigEndian.PutUint32(h[16:], sliceAlign)
		copy(buf[s.off:], s.data)
	}
	return os.WriteFile(out, buf, 0o755)
}

func alignUp(n, a uint32) uint32 { return (n + a - 1) &^ (a - 1) }
