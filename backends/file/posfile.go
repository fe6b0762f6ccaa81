package file

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fvsql/fvsql/pgerror"
)

// groupPos is a consumer group's position in one stream file, kept in the
// side file "<path>.<group>.pos": two 32-byte slots written alternately,
// each
//
//	0 magic "FVGP"  4 CRC-32C of bytes 8..32  8 generation u64
//	16 seq i64 (next sequence to deliver)     24 offset i64 (lines: byte offset of the next line)
//
// A torn write damages only the slot being written; the other one still
// holds the previous position, so a crash costs redelivery, never loss.
// The side file is flocked while a consumer of the group is open: one
// consumer per group and file.
type groupPos struct {
	f   *os.File
	gen uint64
	seq int64
	off int64
	has bool // a position was stored
}

const posMagic = "FVGP"

// posPath is the side file of a group: the group name is escaped so that
// any name makes one file next to the stream.
func posPath(path, group string) string {
	var b strings.Builder
	for i := 0; i < len(group); i++ {
		c := group[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c) // '.' too: the group part never holds a dot
		}
	}
	return path + "." + b.String() + ".pos"
}

func openGroupPos(path, group string) (*groupPos, error) {
	pp := posPath(path, group)
	_, statErr := os.Stat(pp)
	f, err := os.OpenFile(pp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, openError(err, pp)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState,
				"file: consumer group %q of %s is in use (one consumer per group)", group, path)
		}
		return nil, ioError(err, "file: lock %s", pp)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(pp)); err != nil {
			_ = f.Close()
			return nil, ioError(err, "file: sync directory of %s", pp)
		}
	}
	g := &groupPos{f: f}
	var b [64]byte
	n, _ := f.ReadAt(b[:], 0)
	for i := 0; i+32 <= n; i += 32 {
		s := b[i : i+32]
		if string(s[:4]) != posMagic || le.Uint32(s[4:]) != crc32.Checksum(s[8:32], castagnoli) {
			continue
		}
		if gen := le.Uint64(s[8:]); !g.has || gen > g.gen {
			g.gen, g.seq, g.off, g.has = gen, int64(le.Uint64(s[16:])), int64(le.Uint64(s[24:])), true
		}
	}
	return g, nil
}

// store writes a new position and syncs it.
func (g *groupPos) store(seq, off int64) error {
	g.gen++
	var s [32]byte
	copy(s[:], posMagic)
	le.PutUint64(s[8:], g.gen)
	le.PutUint64(s[16:], uint64(seq))
	le.PutUint64(s[24:], uint64(off))
	le.PutUint32(s[4:], crc32.Checksum(s[8:], castagnoli))
	if _, err := g.f.WriteAt(s[:], int64(g.gen%2)*32); err != nil {
		return ioError(err, "file: write %s", g.f.Name())
	}
	if err := datasync(g.f); err != nil {
		return ioError(err, "file: sync %s", g.f.Name())
	}
	g.seq, g.off, g.has = seq, off, true
	return nil
}

func (g *groupPos) close() error { return g.f.Close() }

// removeSideFiles deletes the group position files of a stream file.
func removeSideFiles(path string) error {
	dir, base := filepath.Split(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		n := e.Name()
		mid, ok := strings.CutPrefix(n, base+".")
		if ok {
			mid, ok = strings.CutSuffix(mid, ".pos")
		}
		if ok && !strings.Contains(mid, ".") && !e.IsDir() {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
