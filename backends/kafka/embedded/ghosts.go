package embedded

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ghostSweep is how often the reaper looks for ghosts.
const ghostSweep = time.Second

// ghostReaper works around a bug of kfake's classic group coordinator: a
// member whose process died while its JoinGroup or SyncGroup waited for
// the rebalance is kept for ever (its session timer is only restarted when
// a response reaches it, and the leader's SyncGroup clears the pending
// sync timer), so the partitions assigned to it are read by nobody. Real
// Kafka expires such a member after its session timeout. The reaper
// watches which members talk to the group coordinator (control functions
// that observe and let kfake handle every request) and which client
// connections are open (it wraps the broker's listener), and makes a
// member leave its group when the connection it joined on is closed and
// it has sent nothing for Config.GhostAfter: its process is gone. A live member
// heartbeats every 3 s, and one waiting in a long JoinGroup keeps that
// connection open.
type ghostReaper struct {
	after time.Duration // Config.GhostAfter
	mu    sync.Mutex
	seen  map[ghostKey]time.Time // last request of a member; first sighting for members never heard
	open  map[string]bool        // remote addresses of the broker's open connections
}

func newGhostReaper(after time.Duration) *ghostReaper {
	return &ghostReaper{after: after, seen: map[ghostKey]time.Time{}, open: map[string]bool{}}
}

// listen wraps the broker's listener so that the reaper knows which
// connections are open.
func (r *ghostReaper) listen(l net.Listener) net.Listener { return &trackedListener{Listener: l, r: r} }

type trackedListener struct {
	net.Listener
	r *ghostReaper
}

func (l *trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	addr := c.RemoteAddr().String()
	l.r.mu.Lock()
	l.r.open[addr] = true
	l.r.mu.Unlock()
	return &trackedConn{Conn: c, r: l.r, addr: addr}, nil
}

// trackedConn marks its address closed when the peer is gone (a read
// fails) or the broker closes it.
type trackedConn struct {
	net.Conn
	r    *ghostReaper
	addr string
	once sync.Once
}

func (c *trackedConn) gone() {
	c.once.Do(func() {
		c.r.mu.Lock()
		delete(c.r.open, c.addr)
		c.r.mu.Unlock()
	})
}

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.gone()
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.gone()
	return c.Conn.Close()
}

type ghostKey struct{ group, member string }

// watch installs the observers on the embedded broker and runs the
// reaper until ctx ends, through cl (a client of that broker); done is
// closed when the reaper has stopped.
func (r *ghostReaper) watch(ctx context.Context, c *kfake.Cluster, cl *kgo.Client, log interface {
	Warn(string, ...any)
}, done chan<- struct{}) {
	for _, key := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.TxnOffsetCommit, kmsg.LeaveGroup} {
		c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			r.observe(req)
			return nil, nil, false
		})
	}
	go func() {
		defer close(done)
		t := time.NewTicker(ghostSweep)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.reap(ctx, cl, log)
			}
		}
	}()
}

func (r *ghostReaper) observe(req kmsg.Request) {
	var group, member string
	switch q := req.(type) {
	case *kmsg.JoinGroupRequest:
		group, member = q.Group, q.MemberID
	case *kmsg.SyncGroupRequest:
		group, member = q.Group, q.MemberID
	case *kmsg.HeartbeatRequest:
		group, member = q.Group, q.MemberID
	case *kmsg.OffsetCommitRequest:
		group, member = q.Group, q.MemberID
	case *kmsg.TxnOffsetCommitRequest:
		group, member = q.Group, q.MemberID
	case *kmsg.LeaveGroupRequest:
		r.mu.Lock()
		for _, m := range q.Members {
			delete(r.seen, ghostKey{q.Group, m.MemberID})
		}
		delete(r.seen, ghostKey{q.Group, q.MemberID})
		r.mu.Unlock()
		return
	}
	if member == "" {
		return
	}
	r.mu.Lock()
	r.seen[ghostKey{group, member}] = time.Now()
	r.mu.Unlock()
}

// reap makes the members whose connection is closed and who have been
// silent for r.after leave their groups, and forgets members no group
// has any more.
func (r *ghostReaper) reap(ctx context.Context, cl *kgo.Client, log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(ctx, r.after)
	defer cancel()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return
	}
	described, err := adm.DescribeGroups(ctx, listed.Groups()...)
	if err != nil {
		return
	}
	now := time.Now()
	present := map[ghostKey]bool{}
	var ghosts []ghostKey
	r.mu.Lock()
	for _, g := range described.Sorted() {
		if g.Err != nil || g.ProtocolType != "consumer" {
			continue
		}
		for _, m := range g.Members {
			k := ghostKey{g.Group, m.MemberID}
			present[k] = true
			last, ok := r.seen[k]
			if !ok {
				r.seen[k] = now
				continue
			}
			if now.Sub(last) > r.after && !r.open[m.ClientHost] {
				ghosts = append(ghosts, k)
			}
		}
	}
	for k := range r.seen {
		if !present[k] && now.Sub(r.seen[k]) > r.after {
			delete(r.seen, k)
		}
	}
	r.mu.Unlock()
	for _, k := range ghosts {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = k.group
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = k.member
		req.Members = append(req.Members, m)
		if _, err := req.RequestWith(ctx, cl); err == nil {
			log.Warn("embedded broker: a group member silent for too long was removed (its process died while joining)", "group", k.group, "member", k.member)
		}
	}
}
