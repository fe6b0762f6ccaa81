package file

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

func init() {
	backends.Register("file", func(_ context.Context, u *url.URL, env backends.Env) (backends.Streamer, error) {
		return Open(u, env)
	})
}

// config is what a file:// URI says.
type config struct {
	root      string // every stream file is inside it (absolute, symlinks resolved)
	base      string // directory relative stream names resolve in
	pinned    string // when the URI names a file: the file every relative name means
	newFormat format // of files this Streamer creates
	block     int64  // beacon interval of logs it creates
}

// Open makes a Streamer for a file:// URI (see the package documentation
// for the forms and options).
func Open(u *url.URL, env backends.Env) (*Streamer, error) {
	cfg, err := parseURI(u, env)
	if err != nil {
		return nil, err
	}
	return &Streamer{cfg: cfg, files: map[string]*logFile{}}, nil
}

func parseURI(u *url.URL, env backends.Env) (config, error) {
	cfg := config{newFormat: formatLog, block: defaultBlock}
	bad := func(format string, args ...any) (config, error) {
		return config{}, pgerror.New(pgerror.InvalidParameterValue, "file: "+format, args...)
	}
	if u.Host != "" && u.Host != "localhost" {
		return bad("URI %q names host %q: only local files (file:///path) are supported", u.String(), u.Host)
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "format":
			switch v {
			case "log":
				cfg.newFormat = formatLog
			case "lines":
				cfg.newFormat = formatLines
			default:
				return bad("format must be log or lines, not %q", v)
			}
		case "block_size":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < minBlock || n > maxBlock {
				return bad("block_size must be an integer from %d to %d, not %q", minBlock, maxBlock, v)
			}
			cfg.block = n
		default:
			return bad("unknown option %q (options: format, block_size)", k)
		}
	}
	p := u.Path
	if u.Opaque != "" { // file:relative/path
		var err error
		if p, err = url.PathUnescape(u.Opaque); err != nil {
			return bad("invalid path %q", u.Opaque)
		}
	}
	root, err := fileRoot(env)
	if err != nil {
		return config{}, err
	}
	cfg.root = root
	if p == "" {
		cfg.base = root
		return cfg, nil
	}
	trailing := strings.HasSuffix(p, "/")
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	if err := cfg.inside(p); err != nil {
		return config{}, err
	}
	if st, err := os.Stat(p); trailing || err == nil && st.IsDir() {
		cfg.base = p
	} else {
		cfg.pinned, cfg.base = p, filepath.Dir(p)
	}
	return cfg, nil
}

// fileRoot is the directory every stream file must be inside: Env.FileRoot,
// or <Env.DataDir>/files; created if missing, absolute, its symlinks
// resolved (so that paths resolved the same way compare with it).
func fileRoot(env backends.Env) (string, error) {
	root := env.FileRoot
	if root == "" {
		if env.DataDir == "" {
			return "", pgerror.New(pgerror.InvalidParameterValue, "file: no root directory for files (Env.FileRoot or Env.DataDir)")
		}
		root = filepath.Join(env.DataDir, "files")
	}
	root, err := filepath.Abs(root)
	if err == nil {
		err = os.MkdirAll(root, 0o755)
	}
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return "", ioError(err, "file: root directory %s", root)
	}
	return root, nil
}

// inside refuses (42501) a clean absolute path that is not inside the root
// once the symlinks of its longest existing prefix are resolved: neither
// "..", nor a symlink in the root pointing out of it, reaches other files.
// A symlink swapped in after the check is not caught: whoever can write the
// root can do that.
func (c *config) inside(p string) error {
	real, err := resolveExisting(p)
	if err != nil {
		return ioError(err, "file: resolve %s", p)
	}
	if rel, err := filepath.Rel(c.root, real); err == nil && filepath.IsLocal(rel) || real == c.root {
		return nil
	}
	return pgerror.New(pgerror.InsufficientPrivilege, "file: %s is outside the server's file root %s", p, c.root).
		WithHint("file:// streams live under the file root (the server's --file-root); relative paths resolve in it.")
}

// resolveExisting resolves the symlinks of p's longest existing prefix and
// appends the rest, which does not exist yet.
func resolveExisting(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return "", err
	}
	dir := filepath.Dir(p)
	if dir == p {
		return p, nil
	}
	real, err = resolveExisting(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, filepath.Base(p)), nil
}

// resolve maps a stream name to its file, which must be inside the root.
func (c *config) resolve(name string) (string, error) {
	var p string
	switch {
	case name != "" && filepath.IsAbs(name):
		p = filepath.Clean(name)
	case c.pinned != "":
		p = c.pinned
	case name == "":
		return "", pgerror.New(pgerror.InvalidParameterValue, "file: empty stream name")
	default:
		p = filepath.Join(c.base, name)
	}
	// Checked at every use, not once: a symlink made since would count.
	if err := c.inside(p); err != nil {
		return "", err
	}
	if p != c.pinned && !filepath.IsAbs(name) && !filepath.IsLocal(name) {
		return "", pgerror.New(pgerror.InvalidParameterValue, "file: stream name %q leaves the directory %s (use an absolute path)", name, c.base)
	}
	return p, nil
}

// Streamer is the file backend: stream names are paths.
type Streamer struct {
	cfg    config
	mu     sync.Mutex
	files  map[string]*logFile // referenced by this Streamer (writers)
	closed bool
}

var (
	_ backends.Streamer           = (*Streamer)(nil)
	_ backends.PositionedProducer = (*producer)(nil)
)

// Path returns the file a stream name resolves to.
func (s *Streamer) Path(stream string) (string, error) { return s.cfg.resolve(stream) }

func (s *Streamer) file(path string) (*logFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState, "file: the Streamer is closed")
	}
	lf := s.files[path]
	if lf == nil {
		lf = acquire(path)
		s.files[path] = lf
	}
	return lf, nil
}

// Close releases the files this Streamer wrote (their locks go with the
// last reference in the process).
func (s *Streamer) Close() error {
	s.mu.Lock()
	files := s.files
	s.files, s.closed = nil, true
	s.mu.Unlock()
	for _, lf := range files {
		lf.release()
	}
	return nil
}

// CreateStream creates the file (the directory must exist). A new log
// gets its header at once; an existing file of any format is kept.
func (s *Streamer) CreateStream(_ context.Context, spec backends.StreamSpec) error {
	path, err := s.cfg.resolve(spec.Name)
	if err != nil {
		return err
	}
	created, err := createFile(path)
	if err != nil {
		return err
	}
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return ioError(err, "file: sync directory of %s", path)
		}
	}
	if s.cfg.newFormat != formatLog {
		return nil
	}
	lf, err := s.file(path)
	if err != nil {
		return err
	}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.w != nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return openError(err, path)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil // another process writes it: its writer makes the header
		}
		return ioError(err, "file: lock %s", path)
	}
	st, err := f.Stat()
	if err != nil {
		return ioError(err, "file: stat %s", path)
	}
	if st.Size() == 0 {
		if err := writeHeader(f, s.cfg.block); err != nil {
			return ioError(err, "file: write %s", path)
		}
	}
	return nil
}

// DropStream deletes the file and its group position files.
func (s *Streamer) DropStream(_ context.Context, name string) error {
	path, err := s.cfg.resolve(name)
	if err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return pgerror.New(pgerror.InvalidParameterValue, "file: %s is a directory, not a stream file", path)
	}
	lf := acquire(path)
	defer lf.release()
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.closeWriter()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return ioError(err, "file: remove %s", path)
	}
	if err := removeSideFiles(path); err != nil {
		return ioError(err, "file: remove group positions of %s", path)
	}
	if err := syncDir(filepath.Dir(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return ioError(err, "file: sync directory of %s", path)
	}
	return nil
}

// Producer returns a producer; it writes through the process's single
// writer of each file.
func (s *Streamer) Producer(context.Context) (backends.Producer, error) {
	return &producer{s: s}, nil
}

type producer struct{ s *Streamer }

// Send appends the messages of each file as one batch and fsyncs it
// before returning; a missing file is created (its directory must exist).
func (p *producer) Send(ctx context.Context, msgs []backends.Message) error {
	return p.send(ctx, msgs, nil)
}

// SendAt is Send with the positions recorded in each file's batch, in the
// same fsync (a batch is whole or absent after a crash). Messages of
// several files are not atomic together: each file's batch is. With no
// messages there is no file to record positions in, and nothing happens.
func (p *producer) SendAt(ctx context.Context, msgs []backends.Message, positions map[string]int64) error {
	if positions == nil {
		positions = map[string]int64{}
	}
	return p.send(ctx, msgs, positions)
}

func (p *producer) send(ctx context.Context, msgs []backends.Message, positions map[string]int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// One batch per file, files in order of first appearance.
	var order []string
	byPath := map[string][]backends.Message{}
	paths := make([]string, len(msgs))
	lastName, lastPath := "", ""
	for i := range msgs {
		if i == 0 || msgs[i].Stream != lastName {
			path, err := p.s.cfg.resolve(msgs[i].Stream)
			if err != nil {
				return err
			}
			lastName, lastPath = msgs[i].Stream, path
		}
		paths[i] = lastPath
		if _, ok := byPath[lastPath]; !ok {
			order = append(order, lastPath)
			byPath[lastPath] = nil
		}
	}
	if len(order) == 1 {
		byPath[order[0]] = msgs
	} else {
		for i := range msgs {
			byPath[paths[i]] = append(byPath[paths[i]], msgs[i])
		}
	}
	for _, path := range order {
		lf, err := p.s.file(path)
		if err != nil {
			return err
		}
		lf.mu.Lock()
		err = lf.openWriter(p.s.cfg.newFormat, p.s.cfg.block)
		if err == nil {
			err = lf.appendBatch(byPath[path], positions)
		}
		lf.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// Positions returns what SendAt recorded in the stream's file: the
// writer's map, recovered from the log when the file was opened.
func (p *producer) Positions(_ context.Context, stream string) (map[string]int64, error) {
	path, err := p.s.cfg.resolve(stream)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	lf, err := p.s.file(path)
	if err != nil {
		return nil, err
	}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if err := lf.openWriter(p.s.cfg.newFormat, p.s.cfg.block); err != nil {
		return nil, err
	}
	maps.Copy(out, lf.positions)
	return out, nil
}

func (p *producer) Close() error { return nil }

// Scan reads what the file holds when Scan begins (committed batches of a
// log; complete lines of a text file, the last one even without its
// newline), in batches of up to scanBatch messages of shard 0. The
// messages share one buffer reused between calls of fn.
func (s *Streamer) Scan(ctx context.Context, stream string, fn func(int32, []backends.Message) error) error {
	path, err := s.cfg.resolve(stream)
	if err != nil {
		return err
	}
	f, err := openRead(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lf := acquire(path)
	defer lf.release()
	limit, err := lf.readLimit(f)
	if err != nil {
		return err
	}
	src, err := newSource(f, limit)
	if err != nil || src == nil {
		return err
	}
	var batch []backends.Message
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var moved bool
		batch, moved, err = src.read(stream, batch[:0], scanBatch, limit, true, nil)
		if err != nil {
			return ioError(err, "file: read %s", path)
		}
		if len(batch) > 0 {
			if err := fn(0, batch); err != nil {
				return err
			}
		}
		src.release() // fn is done with the messages: reuse the buffer
		if !moved {
			return nil
		}
	}
}

const scanBatch = 4096

// openRead opens a stream file for reading.
func openRead(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, pgerror.New(pgerror.UndefinedTable, "file: %s does not exist", path)
		}
		return nil, openError(err, path)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ioError(err, "file: stat %s", path)
	}
	if st.IsDir() {
		f.Close()
		return nil, pgerror.New(pgerror.InvalidParameterValue, "file: %s is a directory, not a stream file", path)
	}
	return f, nil
}
