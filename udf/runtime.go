package udf

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/fvsql/fvsql/pgerror"
)

// Limits bound what user code may use.
type Limits struct {
	// MemoryPages is the most linear memory one instance may have, in
	// 64 KiB pages; 0 is DefaultMemoryPages.
	MemoryPages uint32
	// CallTimeout is how long one call may run before its instance is
	// closed and the call fails; 0 is DefaultCallTimeout.
	CallTimeout time.Duration
	// ModuleBytes is the largest module accepted; 0 is DefaultModuleBytes.
	ModuleBytes int
}

// Defaults of Limits.
const (
	DefaultMemoryPages = 1024 // 64 MiB
	DefaultCallTimeout = time.Second
	DefaultModuleBytes = 32 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MemoryPages == 0 {
		l.MemoryPages = DefaultMemoryPages
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = DefaultCallTimeout
	}
	if l.ModuleBytes <= 0 {
		l.ModuleBytes = DefaultModuleBytes
	}
	return l
}

// Runtime compiles and runs modules: one per process. A watchdog
// goroutine keeps a coarse clock and closes the instances whose call has
// run longer than Limits.CallTimeout (wazero then ends the call with an
// exit error, which the call reports as a timeout).
type Runtime struct {
	rt     wazero.Runtime
	limits Limits
	ctx    context.Context
	cancel context.CancelFunc

	start    time.Time
	tick     atomic.Int64 // ms since start, advanced by the watchdog
	interval time.Duration

	mu   sync.Mutex
	live map[*instance]struct{} // instances the watchdog watches
	done chan struct{}
}

// NewRuntime starts a runtime with the given limits.
func NewRuntime(limits Limits) (*Runtime, error) {
	limits = limits.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(limits.MemoryPages).
		WithCloseOnContextDone(true) // the watchdog's Close ends a running call
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	// WASI is the one host module: what toolchains' runtimes import
	// (clocks, random, fd_write for panics). Instances get no
	// filesystem, no sockets, no environment; clocks and random are
	// wazero's deterministic ones.
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		cancel()
		return nil, err
	}
	r := &Runtime{
		rt: rt, limits: limits, ctx: ctx, cancel: cancel,
		start: time.Now(), live: map[*instance]struct{}{}, done: make(chan struct{}),
		interval: min(max(limits.CallTimeout/4, time.Millisecond), 100*time.Millisecond),
	}
	r.tick.Store(1)
	go r.watch()
	return r, nil
}

// Limits returns the runtime's limits, defaults filled in.
func (r *Runtime) Limits() Limits { return r.limits }

// Close stops the watchdog and closes every module.
func (r *Runtime) Close() error {
	select {
	case <-r.done:
		return nil
	default:
	}
	r.cancel()
	<-r.done
	return r.rt.Close(context.Background())
}

// watch advances the clock and closes instances stuck in a call.
func (r *Runtime) watch() {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	limit := r.limits.CallTimeout.Milliseconds()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Since(r.start).Milliseconds() + 1
		r.tick.Store(now)
		r.mu.Lock()
		var stuck []*instance
		for in := range r.live {
			if since := in.since.Load(); since != 0 && now-since > limit {
				stuck = append(stuck, in)
			}
		}
		r.mu.Unlock()
		for _, in := range stuck {
			in.killed.Store(true)
			in.close(exitTimeout)
		}
	}
}

// exitTimeout is the exit code the watchdog closes an instance with.
const exitTimeout = 124

func (r *Runtime) watchInstance(in *instance) {
	r.mu.Lock()
	r.live[in] = struct{}{}
	r.mu.Unlock()
}

func (r *Runtime) unwatch(in *instance) {
	r.mu.Lock()
	delete(r.live, in)
	r.mu.Unlock()
}

// errClosed is returned by calls into a function or runtime that was
// closed.
var errClosed = errors.New("udf: closed")

func definitionError(format string, args ...any) *pgerror.Error {
	return pgerror.New(pgerror.InvalidFunctionDefinition, format, args...)
}
