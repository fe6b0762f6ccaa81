package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/fvsql/fvsql/engine"
	"github.com/jackc/pgx/v5"
)

// Options are the settings every scenario shares.
type Options struct {
	Out       io.Writer
	Mode      string   // server placement: "inproc" (default) or "child"
	Exe       string   // the fvsql-bench binary, for child mode (runs `serve`)
	Kafka     []string // a real broker; empty: embedded kfake
	URL       string   // a running server instead of starting one
	ServerPID int      // with URL: the server's pid, for its memory and CPU
	BrokerPID int      // with Kafka: the broker's pid, for its CPU
	// TopicPrefix is the servers' --topic-prefix. Empty: none on a fresh
	// embedded broker, a unique "bench-<id>." on a real one. With URL it
	// must be the running server's prefix.
	TopicPrefix string
	Stream      engine.Config // STREAM_* settings of the servers started
	LogLevel    string        // servers' log level (default warn)
	Timeout     time.Duration // bound of the whole scenario
	ProfileDir  string        // write CPU profiles (<phase>.pprof) and heap profiles at the peak (<phase>.heap.pprof) of measured phases here
	Command     string        // the command line that reproduces the run
	QuietWait   time.Duration // before each measured phase, wait up to this long for the rest of the host to go idle
	SyncWrites  bool          // the embedded broker fsyncs every batch (fvsql's --sync-writes)
}

// Revision names the source a binary was built from when the build
// carries no VCS stamp: go build -ldflags "-X github.com/fvsql/fvsql/bench.Revision=…".
var Revision = ""

// buildRevision is the binary's VCS revision (and whether the tree was
// modified), or Revision.
func buildRevision() string {
	rev, modified := Revision, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified tree)"
				}
			}
		}
	}
	if rev == "" {
		return "unknown revision (no VCS stamp: build with -ldflags \"-X github.com/fvsql/fvsql/bench.Revision=$(git rev-parse --short HEAD)\")"
	}
	return rev + modified
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// connect opens a pgx connection, bounded by 30 s.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return pgx.Connect(cctx, url)
}

// execSQL runs a statement with the simple protocol, bounded by d.
func execSQL(ctx context.Context, c *pgx.Conn, d time.Duration, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// phase measures a server and the host over a measured phase.
type phase struct {
	srv         Server
	brokerPID   int
	benchBroker bool // the embedded broker runs in the bench process
	u0          Usage
	host0       time.Duration
	self0       time.Duration
	broker0     time.Duration
	start       time.Time

	dur       time.Duration
	u1        Usage
	hostCPU   time.Duration // every process on the host
	srvCPU    time.Duration // the server's process
	brokerCPU time.Duration // the broker's process, when known and separate (-1: unknown)
	otherCPU  time.Duration // the rest: the bench's own work when separate, other tenants
	check     string        // a failed output check, reported with the figures
}

// startPhase resets the server's peaks and notes its CPU, the broker's
// and the host's.
func (h *harness) startPhase(ctx context.Context, s Server) (*phase, error) {
	h.waitQuiet(ctx, s)
	if err := s.ResetPeaks(); err != nil {
		return nil, fmt.Errorf("reset peaks: %w", err)
	}
	u0, err := s.Usage()
	if err != nil {
		return nil, err
	}
	p := &phase{srv: s, u0: u0, host0: HostCPU(), self0: selfCPU(), brokerPID: h.o.BrokerPID, benchBroker: h.broker != nil}
	if p.brokerPID > 0 && p.brokerPID != s.PID() && p.brokerPID != os.Getpid() {
		if u, err := PIDUsage(p.brokerPID); err == nil {
			p.broker0 = u.CPU
		} else {
			p.brokerPID = 0
		}
	} else {
		p.brokerPID = 0
	}
	p.start = time.Now()
	return p, nil
}

// waitQuiet waits, up to Options.QuietWait, until the rest of the host
// (other tenants) uses less than a quarter of a core over 300 ms, so that
// measured phases do not share the CPUs with someone else's build.
func (h *harness) waitQuiet(ctx context.Context, s Server) {
	if h.o.QuietWait <= 0 {
		return
	}
	cpuOf := func(pid int) time.Duration {
		if pid <= 0 || pid == os.Getpid() {
			return 0
		}
		u, err := PIDUsage(pid)
		if err != nil {
			return 0
		}
		return u.CPU
	}
	ours := func() time.Duration { return selfCPU() + cpuOf(s.PID()) + cpuOf(h.o.BrokerPID) }
	deadline := time.Now().Add(h.o.QuietWait)
	const window = 300 * time.Millisecond
	var other time.Duration
	for time.Now().Before(deadline) && ctx.Err() == nil {
		h0, o0 := HostCPU(), ours()
		select {
		case <-ctx.Done():
			return
		case <-time.After(window):
		}
		other = (HostCPU() - h0) - (ours() - o0)
		if other < window/4 {
			return
		}
	}
	fmt.Fprintf(os.Stderr, "bench: the host stayed busy for %s (other processes used %.1f cores): measuring anyway\n", h.o.QuietWait, other.Seconds()/window.Seconds())
}

// end notes the phase's duration, CPU and peaks.
func (p *phase) end() error {
	p.dur = time.Since(p.start)
	p.hostCPU = HostCPU() - p.host0
	self := selfCPU() - p.self0
	u1, err := p.srv.Usage()
	if err != nil {
		return err
	}
	p.u1 = u1
	p.srvCPU = u1.CPU - p.u0.CPU
	p.brokerCPU = -1
	if p.brokerPID > 0 {
		if u, err := PIDUsage(p.brokerPID); err == nil {
			p.brokerCPU = u.CPU - p.broker0
		}
	}
	if p.benchBroker && p.srv.PID() != os.Getpid() {
		// Child mode: the bench process hosts the broker; its CPU is
		// (mostly) the broker's.
		p.brokerCPU = self
	}
	p.otherCPU = p.hostCPU - p.srvCPU - max(p.brokerCPU, 0)
	if p.srv.PID() != os.Getpid() && !p.benchBroker {
		p.otherCPU -= self
	}
	p.otherCPU = max(p.otherCPU, 0)
	return nil
}

func cpuSecs(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", d.Seconds())
}

func perCPU(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return Count(float64(n) / d.Seconds())
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
