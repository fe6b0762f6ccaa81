package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// ErrNotFound is returned by Get for a missing key.
var ErrNotFound = errors.New("state: not found")

// ErrDamaged is returned (wrapped) by Open for a store Pebble cannot
// open: a file missing or damaged.
var ErrDamaged = errors.New("state: damaged store")

// Store is one Pebble database. It is safe for concurrent use.
type Store struct {
	db *pebble.DB
}

// DefaultCacheBytes is the block cache of a Store opened with Open.
const DefaultCacheBytes = 256 << 20

// Open opens (creating if needed) the Pebble database in dir, with the
// default block cache.
func Open(dir string) (*Store, error) { return OpenCache(dir, DefaultCacheBytes) }

// OpenCache is Open with a block cache of cacheBytes: the decompressed
// blocks of recently read keys, which key lookups on a view (pull
// queries) and read-modify-write state hit when their working set fits.
func OpenCache(dir string, cacheBytes int64) (*Store, error) {
	cache := pebble.NewCache(cacheBytes)
	opts := &pebble.Options{
		Logger: quietLogger{},
		// Operator state is read-modify-write per key: a larger block
		// cache keeps hot keys of big states in memory, and larger
		// memtables flush (and compact) less often.
		Cache:        cache,
		MemTableSize: 32 << 20,
		Levels:       make([]pebble.LevelOptions, 7),
	}
	// Most reads of a new window's or group's key miss: bloom filters
	// answer them without reading data blocks.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if err := checkDir(dir); err != nil {
		cache.Unref()
		return nil, err
	}
	db, err := openPebble(dir, opts)
	cache.Unref() // the DB holds its own reference
	if err != nil && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "lock held by current process")) {
		// Pebble's LOCK file is held: the store is fine, and in use.
		return nil, fmt.Errorf("state: %s is in use by another process (it holds %s): stop that process, or give this one another data directory: %w",
			dir, filepath.Join(dir, "LOCK"), err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w; %s", ErrDamaged, dir, err, moveAside(dir))
	}
	return &Store{db: db}, nil
}

// openPebble is pebble.Open, with a panic in it (Pebble panics on some
// damage rather than failing) returned as an error.
func openPebble(dir string, opts *pebble.Options) (db *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("pebble could not open it: %v", r)
		}
	}()
	return pebble.Open(dir, opts)
}

// checkDir refuses a directory holding a Pebble store's files but no
// CURRENT: Pebble would take it for a new store and replay the old WAL
// into it (and panics doing so). Which MANIFEST was current cannot be
// told safely, so it is not repaired.
func checkDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state: open %s: %w", dir, err)
	}
	var files []string
	for _, e := range ents {
		name := e.Name()
		if name == "CURRENT" {
			return nil
		}
		if strings.HasPrefix(name, "MANIFEST-") || strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".sst") {
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		return nil
	}
	if len(files) > 4 {
		files = append(files[:4], "…")
	}
	return fmt.Errorf("%w: %s is missing, but the directory holds a store (%s): Pebble would start a new store over it; %s",
		ErrDamaged, filepath.Join(dir, "CURRENT"), strings.Join(files, ", "), moveAside(dir))
}

// moveAside is the hint of a refusal to open dir.
func moveAside(dir string) string {
	return fmt.Sprintf("move %s aside (or restore it from a backup) and start again: it is a local copy, which fvsql rebuilds from Kafka "+
		"(the catalog from its topic, views from their tables, operator state from the state topics)", dir)
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Get returns a copy of the value stored under key, or ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("state: get: %w", err)
	}
	out := bytes.Clone(v)
	return out, closer.Close()
}

// Set stores value under key durably (fsync). It is safe to modify the
// contents of the arguments after Set returns.
func (s *Store) Set(key, value []byte) error {
	if err := s.db.Set(key, value, pebble.Sync); err != nil {
		return fmt.Errorf("state: set: %w", err)
	}
	return nil
}

// Delete removes key durably. It is safe to modify key after Delete returns.
func (s *Store) Delete(key []byte) error {
	if err := s.db.Delete(key, pebble.Sync); err != nil {
		return fmt.Errorf("state: delete: %w", err)
	}
	return nil
}

// Scan calls fn for every key with the given prefix, in key order. The
// slices passed to fn are only valid until fn returns.
func (s *Store) Scan(prefix []byte, fn func(key, value []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("state: scan: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return fmt.Errorf("state: scan: %w", err)
	}
	return it.Close()
}

// exactSizeBelow is the estimate under which Size counts exactly.
const exactSizeBelow = 16 << 20

// Size returns the bytes of keys and values stored under prefix. Large
// ranges are estimated from the sstables they cover (cheap; recent writes
// still in the memtables, up to 64 MiB, are not counted); a range
// whose estimate is below 16 MiB is counted exactly by a scan.
func (s *Store) Size(prefix []byte) (int64, error) {
	est, err := s.db.EstimateDiskUsage(prefix, prefixEnd(prefix))
	if err != nil {
		return 0, fmt.Errorf("state: size: %w", err)
	}
	if est >= exactSizeBelow {
		return int64(est), nil
	}
	var n int64
	err = s.Scan(prefix, func(k, v []byte) error {
		n += int64(len(k) + len(v))
		return nil
	})
	return n, err
}

// prefixEnd returns the smallest key greater than every key with prefix.
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
