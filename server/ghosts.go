package server

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ghostAfter is how long a group member of the embedded broker may stay
// silent before it is taken for dead: twice the session timeout fvsql's
// consumers use (engine/worker.go), whose heartbeats come every 3 s.
const ghostAfter = 20 * time.Second

// ghostReaper works around a bug of kfake's classic group coordinator: a
// member whose process died while its JoinGroup or SyncGroup waited for
// the rebalance is kept for ever (its session timer is only restarted when
// a response reaches it, and the leader's SyncGroup clears the pending
// sync timer), so the partitions assigned to it are read by nobody. Real
// Kafka expires such a member after its session timeout. The reaper
// watches which members talk to the group coordinator (control functions
// that observe and let kfake handle every request) and makes a member
// silent for ghostAfter leave its group, which rebalances its partitions
// to the live members.
type ghostReaper struct {
	mu   sync.Mutex
	seen map[ghostKey]time.Time // last request of a member; first sighting for members never heard
}

type ghostKey struct{ group, member string }

// watchGhosts installs the observers on the embedded broker and runs the
// reaper until ctx ends, through cl (a client of that broker).
func watchGhosts(ctx context.Context, c *kfake.Cluster, cl *kgo.Client, log interface {
	Warn(string, ...any)
}) {
	r := &ghostReaper{seen: map[ghostKey]time.Time{}}
	for _, key := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.TxnOffsetCommit, kmsg.LeaveGroup} {
		c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			r.observe(req)
			return nil, nil, false
		})
	}
	go func() {
		t := time.NewTicker(ghostAfter / 4)
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

// reap makes the members silent for ghostAfter leave their groups, and
// forgets members no group has any more.
func (r *ghostReaper) reap(ctx context.Context, cl *kgo.Client, log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(ctx, ghostAfter/2)
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
			if now.Sub(last) > ghostAfter {
				ghosts = append(ghosts, k)
			}
		}
	}
	for k := range r.seen {
		if !present[k] && now.Sub(r.seen[k]) > ghostAfter {
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
