package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

func init() {
	backends.Register("redis", func(ctx context.Context, u *url.URL, env backends.Env) (backends.Streamer, error) {
		cfg, err := ParseURL(u)
		if err != nil {
			return nil, err
		}
		cfg.KeyPrefix = env.TopicPrefix
		return Connect(ctx, cfg)
	})
}

// Defaults.
const (
	DefaultAddr      = "localhost:6379"
	DefaultClaimIdle = 30 * time.Second
	// DefaultLeaseTTL is how long a group member's hold on a shard of a
	// sharded stream lasts unless renewed (every third of it): the time
	// the other members wait before taking over the shards of a member
	// that died.
	DefaultLeaseTTL = 10 * time.Second
	// ConnectTimeout bounds the PING of Connect (the caller's deadline
	// applies when it is sooner).
	ConnectTimeout = 5 * time.Second
	// blockFor bounds one blocking XREAD/XREADGROUP; Read loops over it.
	blockFor = time.Second
	// pageSize is the COUNT of one XRANGE page of Scan.
	pageSize = 1000
	// confTTL is how long a stream's stored options (maxlen) are cached
	// before a producer reads them again.
	confTTL = 5 * time.Second
)

// Config configures a connection.
type Config struct {
	Addr     string // host:port
	Username string // ACL user ("" = default)
	Password string
	DB       int
	// KeyPrefix is prepended to every key fvsql uses (Env.TopicPrefix).
	KeyPrefix string
	// ClaimIdle is the minimum idle time of a pending entry of another
	// group member before a consumer claims it (XAUTOCLAIM). Zero means
	// DefaultClaimIdle; a negative value claims at once (tests).
	ClaimIdle time.Duration
	// LeaseTTL is how long a member's lease on a shard lasts unless
	// renewed (sharded streams); zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// ParseURL reads redis://[[user]:password@]host[:port][/db][?claim_idle=30s].
// Errors have SQLSTATE 22023.
func ParseURL(u *url.URL) (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, pgerror.New(pgerror.InvalidParameterValue, "redis backend %q: "+format, append([]any{u.Redacted()}, args...)...)
	}
	cfg := Config{Addr: u.Host}
	switch {
	case cfg.Addr == "":
		cfg.Addr = DefaultAddr
	case u.Port() == "":
		cfg.Addr = net.JoinHostPort(u.Hostname(), "6379")
	default:
		if p, err := strconv.Atoi(u.Port()); err != nil || p <= 0 || p > 65535 {
			return bad("invalid port %q", u.Port())
		}
	}
	if u.Opaque != "" {
		return bad("want redis://host:port[/db]")
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return bad("database %q is not a non-negative integer", db)
		}
		cfg.DB = n
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "claim_idle":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return bad("claim_idle %q is not a non-negative duration like 30s", v)
			}
			if d == 0 {
				d = -1 // claim at once
			}
			cfg.ClaimIdle = d
		case "lease":
			d, err := time.ParseDuration(v)
			if err != nil || d < 300*time.Millisecond {
				return bad("lease %q is not a duration of at least 300ms like 10s", v)
			}
			cfg.LeaseTTL = d
		default:
			return bad("unknown option %q (known: claim_idle, lease)", k)
		}
	}
	return cfg, nil
}

// Streamer is a connection to one Redis server (database).
type Streamer struct {
	cfg Config
	rdb *goredis.Client

	mu   sync.Mutex
	conf map[string]streamConf // by key: stored stream options
}

type streamConf struct {
	maxLen int64
	shards int // 1: the stream is its key; more: keys <key>:0 … <key>:shards-1
	loaded time.Time
}

var _ backends.Streamer = (*Streamer)(nil)

// Connect makes the client and checks that the server answers PING within
// ConnectTimeout. An unreachable server gives an error wrapping
// backends.ErrNotConnected with SQLSTATE 08001; refused credentials 28P01.
func Connect(ctx context.Context, cfg Config) (*Streamer, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.ClaimIdle == 0 {
		cfg.ClaimIdle = DefaultClaimIdle
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	rdb := goredis.NewClient(&goredis.Options{
		Addr:                     cfg.Addr,
		Username:                 cfg.Username,
		Password:                 cfg.Password,
		DB:                       cfg.DB,
		ClientName:               "fvsql",
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		DialTimeout:              3 * time.Second,
		DialerRetries:            2,
		DialerRetryTimeout:       50 * time.Millisecond,
		ReadTimeout:              10 * time.Second,
		WriteTimeout:             10 * time.Second,
		MaxRetries:               2,
		ContextTimeoutEnabled:    true, // a caller's deadline bounds the socket I/O too
		// Every following consumer holds a connection for up to blockFor.
		PoolSize:        max(64, 10*runtime.GOMAXPROCS(0)),
		MinRetryBackoff: 20 * time.Millisecond,
		MaxRetryBackoff: 200 * time.Millisecond,
	})
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		if goredis.IsAuthError(err) {
			return nil, pgerror.Wrap(err, pgerror.InvalidPassword, "redis: %s refused the credentials", cfg.Addr)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("redis: connect to %s: %w", cfg.Addr, ctx.Err())
		}
		return nil, pgerror.Wrap(fmt.Errorf("%w: %w", backends.ErrNotConnected, err),
			pgerror.SQLClientUnableToEstablish, "redis: cannot reach %s", cfg.Addr)
	}
	return &Streamer{cfg: cfg, rdb: rdb, conf: map[string]streamConf{}}, nil
}

// Client is the underlying go-redis client.
func (s *Streamer) Client() *goredis.Client { return s.rdb }

// Key maps a stream name to its Redis key (KeyPrefix + name).
func (s *Streamer) Key(stream string) string { return s.cfg.KeyPrefix + stream }

// PositionsKey is the hash where SendAt records source positions of a stream.
func (s *Streamer) PositionsKey(stream string) string { return s.Key(stream) + ":fvsql:positions" }

// ConfigKey is the hash holding a stream's options (maxlen).
func (s *Streamer) ConfigKey(stream string) string { return s.Key(stream) + ":fvsql:config" }

// ShardKey is the Redis key of one shard of a stream: the stream's key
// itself when it has one shard, else <key>:<shard> (the toolkit's naming).
func (s *Streamer) ShardKey(stream string, shard, shards int) string {
	if shards <= 1 {
		return s.Key(stream)
	}
	return s.Key(stream) + ":" + strconv.Itoa(shard)
}

// shardKeys lists the keys of a stream's shards, in shard order.
func (s *Streamer) shardKeys(stream string, shards int) []string {
	out := make([]string, max(shards, 1))
	for i := range out {
		out[i] = s.ShardKey(stream, i, shards)
	}
	return out
}

// Close closes the client.
func (s *Streamer) Close() error { return s.rdb.Close() }

// streamOptions are the recognised StreamSpec.Options.
type streamOptions struct {
	maxLen    int64 // 0: no trimming
	hasMaxLen bool
}

// maxShards bounds StreamSpec.Shards (one XREAD names every shard key).
const maxShards = 1024

func parseStreamOptions(opts map[string]string) (streamOptions, error) {
	var o streamOptions
	for k, v := range opts {
		switch strings.ToLower(k) {
		case "maxlen":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 1 {
				return o, pgerror.New(pgerror.InvalidParameterValue, "redis: maxlen must be a positive integer, not %q", v)
			}
			o.maxLen, o.hasMaxLen = n, true
		}
	}
	return o, nil
}

// CreateStream creates the stream key if it is missing (XGROUP CREATE
// MKSTREAM of a throw-away group, destroyed in the same MULTI/EXEC, so an
// empty stream exists without a stray entry or group); an existing stream
// is fine. Option maxlen (a positive integer) is stored in the stream's
// config hash and makes every later XADD of any fvsql producer trim with
// MAXLEN ~ maxlen; options not given keep their stored values, options
// fvsql does not know are ignored. A bad maxlen fails with 22023; a key
// that holds something else than a stream with 42809.
func (s *Streamer) CreateStream(ctx context.Context, spec backends.StreamSpec) error {
	opts, err := parseStreamOptions(spec.Options)
	if err != nil {
		return err
	}
	if spec.Name == "" {
		return pgerror.New(pgerror.InvalidParameterValue, "redis: empty stream name")
	}
	key := s.Key(spec.Name)
	shards := max(spec.Shards, 1)
	if shards > maxShards {
		return pgerror.New(pgerror.InvalidParameterValue, "redis: a stream has at most %d shards, not %d", maxShards, shards)
	}
	// A stream another process created keeps its shards: a different
	// count would route keys to other shards than the ones holding them.
	stored, err := s.rdb.HGet(ctx, s.ConfigKey(spec.Name), "shards").Int()
	switch {
	case errors.Is(err, goredis.Nil):
		stored = 0
	case err != nil:
		return s.fail(ctx, err, "read the options of %s", key)
	}
	if stored > 0 && stored != shards {
		return pgerror.New(pgerror.InvalidParameterValue, "redis: stream %s exists with %d shards, not %d", key, stored, shards)
	}
	tmp := "fvsql-create-" + randomHex(8)
	err = s.txPipelined(ctx, func(p goredis.Pipeliner) error {
		for _, k := range s.shardKeys(spec.Name, shards) {
			p.XGroupCreateMkStream(ctx, k, tmp, "$")
			p.XGroupDestroy(ctx, k, tmp)
		}
		if opts.hasMaxLen {
			p.HSet(ctx, s.ConfigKey(spec.Name), "maxlen", opts.maxLen)
		}
		if shards > 1 {
			p.HSet(ctx, s.ConfigKey(spec.Name), "shards", shards)
		}
		return nil
	})
	s.forgetConf(key)
	if err != nil {
		return s.fail(ctx, err, "create stream %s", key)
	}
	return nil
}

// DropStream deletes the stream key with its positions and config hashes.
func (s *Streamer) DropStream(ctx context.Context, name string) error {
	key := s.Key(name)
	confs, err := s.confs(ctx, []string{name})
	if err != nil {
		return err
	}
	keys := append(s.shardKeys(name, confs[name].shards), s.PositionsKey(name), s.ConfigKey(name))
	if confs[name].shards > 1 {
		keys = append(keys, key) // an unsharded stream of that name before
	}
	err = s.rdb.Del(ctx, keys...).Err()
	s.forgetConf(key)
	if err != nil {
		return s.fail(ctx, err, "drop stream %s", key)
	}
	return nil
}

func (s *Streamer) forgetConf(key string) {
	s.mu.Lock()
	delete(s.conf, key)
	s.mu.Unlock()
}

// confs returns the stored options of each stream name (its MAXLEN
// policy and shard count), reading the config hashes not cached within
// confTTL in one round trip.
func (s *Streamer) confs(ctx context.Context, names []string) (map[string]streamConf, error) {
	out := make(map[string]streamConf, len(names))
	var stale []string
	now := time.Now()
	s.mu.Lock()
	for _, n := range names {
		c, ok := s.conf[s.Key(n)]
		if ok && now.Sub(c.loaded) < confTTL {
			out[n] = c
		} else {
			stale = append(stale, n)
		}
	}
	s.mu.Unlock()
	if len(stale) == 0 {
		return out, nil
	}
	cmds := make([]*goredis.SliceCmd, len(stale))
	err := whenServing(ctx, func() error {
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, n := range stale {
				cmds[i] = p.HMGet(ctx, s.ConfigKey(n), "maxlen", "shards")
			}
			return nil
		})
		return err
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, s.fail(ctx, err, "read stream options")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range stale {
		c := streamConf{shards: 1, loaded: now}
		if vals, err := cmds[i].Result(); err == nil && len(vals) == 2 {
			c.maxLen = confInt(vals[0]) // missing or unreadable: no trimming
			c.shards = max(int(confInt(vals[1])), 1)
		}
		out[n] = c
		s.conf[s.Key(n)] = c
	}
	return out, nil
}

func confInt(v any) int64 {
	str, _ := v.(string)
	n, err := strconv.ParseInt(str, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// shards returns the shard count of a stream.
func (s *Streamer) shards(ctx context.Context, stream string) (int, error) {
	c, err := s.confs(ctx, []string{stream})
	if err != nil {
		return 0, err
	}
	return c[stream].shards, nil
}

// lastID returns the ID of the stream's last entry, or false when the
// stream is empty or missing.
func (s *Streamer) lastID(ctx context.Context, key string) (streamID, bool, error) {
	msgs, err := s.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil {
		return streamID{}, false, s.fail(ctx, err, "read the end of %s", key)
	}
	if len(msgs) == 0 {
		return streamID{}, false, nil
	}
	id, ok := parseID(msgs[0].ID)
	if !ok {
		return streamID{}, false, pgerror.New(pgerror.Internal, "redis: %s returned stream ID %q", key, msgs[0].ID)
	}
	return id, true, nil
}

// Scan reads the stream from its first entry to the last entry present
// when Scan began, in XRANGE pages of pageSize, the next page fetched
// while fn handles the current one. A missing stream has no messages.
func (s *Streamer) Scan(ctx context.Context, stream string, fn func(int32, []backends.Message) error) error {
	shards, err := s.shards(ctx, stream)
	if err != nil {
		return err
	}
	for i, key := range s.shardKeys(stream, shards) {
		if err := s.scanShard(ctx, stream, key, int32(i), fn); err != nil {
			return err
		}
	}
	return nil
}

// scanShard is Scan of one shard's key.
func (s *Streamer) scanShard(ctx context.Context, stream, key string, shard int32, fn func(int32, []backends.Message) error) error {
	end, ok, err := s.lastID(ctx, key)
	if err != nil || !ok {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type page struct {
		msgs []backends.Message
		err  error
	}
	pages := make(chan page, 2)
	go func() {
		defer close(pages)
		from := "-"
		stop := end.String()
		for {
			xs, err := s.rdb.XRangeN(ctx, key, from, stop, pageSize).Result()
			if err != nil {
				pages <- page{err: s.fail(ctx, err, "read %s", key)}
				return
			}
			if len(xs) == 0 {
				return
			}
			msgs, err := s.convert(stream, shard, xs, nil)
			if err == nil && len(msgs) > 0 {
				select {
				case pages <- page{msgs: msgs}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				pages <- page{err: err}
				return
			}
			last, _ := parseID(xs[len(xs)-1].ID)
			if !last.less(end) || len(xs) < pageSize {
				return
			}
			n, _ := last.next()
			from = n.String()
		}
	}()
	for p := range pages {
		if p.err != nil {
			return p.err
		}
		if err := fn(shard, p.msgs); err != nil {
			cancel()
			for range pages { // let the reader stop
			}
			return err
		}
	}
	return ctx.Err()
}

// convert turns entries into messages. Entries without fields (deleted,
// as XREADGROUP and XCLAIM report trimmed pending entries) are skipped and
// their IDs appended to *deleted when deleted is not nil.
func (s *Streamer) convert(stream string, shard int32, xs []goredis.XMessage, deleted *[]string) ([]backends.Message, error) {
	out := make([]backends.Message, 0, len(xs))
	for i := range xs {
		x := &xs[i]
		if x.Values == nil {
			if deleted != nil {
				*deleted = append(*deleted, x.ID)
			}
			continue
		}
		m, err := toMessage(stream, x)
		if err != nil {
			return nil, err
		}
		m.Shard = shard
		out = append(out, m)
	}
	return out, nil
}

// toMessage converts one entry: field "v" is the payload, "k" the key
// (absent: nil key); other fields are ignored.
func toMessage(stream string, x *goredis.XMessage) (backends.Message, error) {
	seq, err := Sequence(x.ID)
	if err != nil {
		return backends.Message{}, pgerror.Wrap(err, pgerror.NumericValueOutOfRange, "stream %s", stream)
	}
	m := backends.Message{
		Stream:    stream,
		Sequence:  seq,
		ID:        x.ID,
		Timestamp: time.UnixMilli(seq >> SeqBits),
	}
	if v, ok := x.Values["v"]; ok {
		m.Payload = toBytes(v)
	}
	if k, ok := x.Values["k"]; ok {
		m.Key = toBytes(k)
	}
	return m, nil
}

func toBytes(v any) []byte {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []byte:
		return append([]byte(nil), v...)
	case nil:
		return nil
	}
	return []byte(fmt.Sprint(v))
}

// notNowWait bounds how long whenServing waits for a server that
// answers "not now".
const notNowWait = 10 * time.Second

// whenServing runs call, and again with backoff for up to notNowWait
// while it fails with a "not now" reply (LOADING while a restarted
// server reads its data back, MASTERDOWN, TRYAGAIN): the server refused
// the commands without running them, so running them again does nothing
// twice. Other errors are returned at once.
func whenServing(ctx context.Context, call func() error) error {
	backoff := 20 * time.Millisecond
	deadline := time.Now().Add(notNowWait)
	for {
		err := call()
		if err == nil || !notNow(err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// txPipelined runs fn's commands in one MULTI/EXEC, through whenServing.
// When EXEC answers EXECABORT, Redis refused a queued command and ran
// none of them; go-redis returns the EXECABORT, and txPipelined the
// refused command's error instead, so that whenServing and fail see its
// kind (inside MULTI a LOADING shows only that way).
func (s *Streamer) txPipelined(ctx context.Context, fn func(goredis.Pipeliner) error) error {
	return whenServing(ctx, func() error {
		cmds, err := s.rdb.TxPipelined(ctx, fn)
		if err != nil && strings.HasPrefix(err.Error(), "EXECABORT") {
			for _, c := range cmds {
				if cerr := c.Err(); cerr != nil && !strings.HasPrefix(cerr.Error(), "EXECABORT") {
					return cerr
				}
			}
		}
		return err
	})
}

// notNow reports a reply of a server that is there but cannot serve now.
func notNow(err error) bool {
	return goredis.IsLoadingError(err) || goredis.IsMasterDownError(err) || goredis.IsTryAgainError(err) ||
		goredis.IsClusterDownError(err)
}

// fail maps a go-redis error: a cancelled or expired ctx stays itself;
// Redis error replies get a SQLSTATE by kind (WRONGTYPE 42809, NOGROUP
// 42704, auth 28000, LOADING/MASTERDOWN/TRYAGAIN and the like are "not
// connected"); everything else (refused dial, EOF, timeouts, an exhausted
// pool) means the server is unreachable now: backends.ErrNotConnected
// with SQLSTATE 08000.
func (s *Streamer) fail(ctx context.Context, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	msg := "redis: " + fmt.Sprintf(format, args...)
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	if errors.Is(err, goredis.ErrClosed) {
		return pgerror.Wrap(err, pgerror.ConnectionException, "%s: the backend connection is closed", msg)
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		text := strings.TrimPrefix(rerr.Error(), "ERR ")
		switch {
		case notNow(err), goredis.IsMaxClientsError(err), goredis.IsReadOnlyError(err):
			// The server is there but cannot serve now: retry later.
		case strings.HasPrefix(text, "WRONGTYPE"):
			return pgerror.Wrap(err, pgerror.WrongObjectType, "%s: the key holds something else than a stream", msg)
		case strings.HasPrefix(text, "NOGROUP"):
			return pgerror.Wrap(err, pgerror.UndefinedObject, "%s: the stream or its consumer group no longer exists", msg)
		case goredis.IsAuthError(err), goredis.IsPermissionError(err):
			return pgerror.Wrap(err, pgerror.InvalidAuthorizationSpec, "%s", msg)
		case goredis.IsOOMError(err):
			return pgerror.Wrap(err, pgerror.ProgramLimitExceeded, "%s", msg)
		default:
			return pgerror.Wrap(err, pgerror.IOError, "%s", msg)
		}
	}
	return pgerror.Wrap(fmt.Errorf("%w: %w", backends.ErrNotConnected, err), pgerror.ConnectionException, "%s", msg)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
