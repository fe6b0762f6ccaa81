package exactlyonce

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fvsql/fvsql/tests/fvsqltest"
)

const (
	rowsEnv  = "FVSQL_EO_ROWS"  // input rows of the crash tests (default 200000)
	killsEnv = "FVSQL_EO_KILLS" // kills per crash run (default 20)
	keysEnv  = "FVSQL_EO_KEYS"  // distinct k values (default 500)
	// realProcsEnv = 2 runs the crash tests on the real broker like on
	// the embedded one: a survivor a and a victim b (default 1: one
	// process that is the victim).
	realProcsEnv = "FVSQL_EO_REAL_PROCS"
	// pipelinesEnv narrows the crash tests to some of their pipelines,
	// comma-separated (default all of crashPipelines), to loop on one.
	pipelinesEnv = "FVSQL_EO_PIPELINES"
)

var crashPipelines = func() []string {
	if v := os.Getenv(pipelinesEnv); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"s1", "w1", "w2", "t3", "v4", "j5", "j6", "j7", "n8", "o9", "c10", "k11", "i12", "d13", "f14", "r15", "r16"} // v4 reads t3
}()

// TestCrashRestart: the pipelines s1 (stateless), w1 (windowed
// aggregate, no repartition), w2 (windowed aggregate behind a
// repartition stage), t3 (top-3 view), v4 (a view over t3), j5 (an
// aggregate over a LEFT JOIN of ev with a second input, dim, whose rows
// for half the keys come halfway), j6 (a view of an inner join's rows)
// j7 (an aggregate over a NOT EXISTS join of ev and dim, in the join's
// stage: two stateful operators in one), n8 (an aggregate over a
// grouped subquery), o9 (a window view: lag per key), c10 (a window
// over a WITH query's hidden stream), k11 (a window's top-N), i12 (a
// join of three inputs written as one join), d13 (a stream's DISTINCT)
// f14 (a stream's top-N in event time: each pair's first row) and r15
// (a stream's window functions in event time: running count, sum and
// lag per key) and r16 (the same over a RANGE frame of a second) run
// over an 8-partition input
// that a plain Kafka producer fills, while the process doing the work is
// killed with SIGKILL at seeded random moments (at least 20 times) and
// restarted on the same data directory. The read_committed output must
// equal the independently computed one exactly.
func TestCrashRestart(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) { runCrash(t, c, 0) })
}

// TestCrashRestartWiped is TestCrashRestart with the killed process's data
// directory wiped before every 4th restart: its state and catalog must
// come back from Kafka (the compacted state topics, the catalog topic).
// It comes back as a new node (a new node id, so new transactional ids):
// it cannot fence the transactions its killed self left open, which hold
// the state partitions' last stable offsets until they time out.
func TestCrashRestartWiped(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) { runCrash(t, c, 4) })
}

// runCrash runs one crash test; wipeEvery > 0 wipes the victim's data
// directory before every wipeEvery-th restart.
//
// Real broker: one process runs everything and is the victim. Embedded
// broker: process a hosts the broker (killing it would kill the broker),
// process b uses it; both run every pipeline and b is the victim, so
// every kill also moves b's partitions to a and back (failover).
func runCrash(t *testing.T, c *cluster, wipeEvery int) {
	began := time.Now()
	rows := envInt(t, rowsEnv, 200_000)
	kills := envInt(t, killsEnv, 20)
	keys := envInt(t, keysEnv, 500)
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 2))
	d := genData(sd, rows, keys)
	t.Logf("crash test: %d rows over %d keys, %d kills, wipe every %d", rows, keys, kills, wipeEvery)

	var victim, ctl *fvsqltest.Process
	if c.mode == "embedded" || envInt(t, realProcsEnv, 1) == 2 {
		ctl = c.start(t, "a")
		victim = c.start(t, "b")
	} else {
		victim = c.start(t, "a")
		ctl = victim
	}
	victimUp := time.Now()
	// Both processes are up (their catalog replay done) before the DDL:
	// a process that is still starting can miss a pipeline created
	// meanwhile (see TestPipelineCreatedDuringStart).
	conn := connect(t, ctl)
	connV := connect(t, victim)
	createPipelines(t, conn, crashPipelines...)
	running(t, conn, 90*time.Second, crashPipelines...)
	if victim != ctl {
		running(t, connV, 90*time.Second, crashPipelines...)
	}
	conn.Close(context.Background())
	connV.Close(context.Background())

	// Warm-up: one row per partition, flushed, so that every partition
	// of w2's repartition topic has heard a watermark from every input
	// partition before the real data comes (a downstream watermark is
	// the minimum over the upstream partitions that reported one).
	prod := startProducer(t, c, c.topic(inputStream), d.recs)
	prod.release(d.warm)
	prod.wait(t, 60*time.Second)
	dimProd := startProducer(t, c, c.topic(dimStream), d.dimRecs)
	dimProd.release(len(d.dimRecs) / 2) // the even keys
	dimProd.wait(t, 60*time.Second)
	flush(t, ctl, 2)

	chunk := (d.data - d.warm) / kills
	modes := map[string]int{}
	wipes := 0
	killStart := time.Now()
	upSince := victimUp
	for i := 1; i <= kills; i++ {
		upto := d.warm + i*chunk
		if i == kills {
			upto = d.data
		}
		prod.release(upto)
		if i == kills/2+1 {
			dimProd.release(len(d.dimRecs)) // the odd keys: their NULL-padded rows leave j5
		}
		mode := "working"
		switch r := rng.Float64(); {
		case r < 0.3:
			mode = "early"
		case r < 0.45 && victim != ctl:
			mode = "failover"
		}
		switch mode {
		case "early": // during start, catalog replay, group join, restore
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
		case "working", "failover": // once it commits epochs with input in them
			if waited, ok := waitWorking(victim, workingTimeout, func() bool { return prod.count() >= upto }); !ok {
				// Not a slow restart (the group session timeout is
				// 10 s, restores take milliseconds): a stall.
				stalled(t, c, victim, ctl, waited)
			}
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		}
		modes[mode]++
		t.Logf("kill %d/%d (%s): %d rows produced, victim up %s", i, kills, mode, prod.count(), time.Since(upSince).Round(time.Millisecond))
		victim.Kill(t)
		if mode == "failover" {
			// Stay down until the survivor owns every partition: it
			// restores the victim's partitions from the state topics.
			ownsAll(t, c, ctl, 60*time.Second)
		}
		if wipeEvery > 0 && i%wipeEvery == 0 {
			victim.WipeDataDir(t)
			wipes++
		}
		victim.Restart(t)
		upSince = time.Now()
	}
	killPhase := time.Since(killStart)
	prod.release(len(d.recs))
	prod.wait(t, 5*time.Minute)
	dimProd.release(len(d.dimRecs))
	dimProd.wait(t, time.Minute)
	t.Logf("all %d records produced; %d kills (%v), %d wipes in %s", len(d.recs), kills, modes, wipes, killPhase.Round(time.Second))

	conn = connect(t, victim)
	running(t, conn, 3*time.Minute, crashPipelines...)
	conn.Close(context.Background())
	flushStart := time.Now()
	flush(t, ctl, 5, func() {
		describeGroups(t, c, crashGroups(c)...)
		if c.mode == "embedded" {
			t.Logf("the final FLUSH cannot finish: if the groups above list more members than the live processes run (2 consumers per stage each), the extra ones belong to dead processes, which the embedded broker should have removed after 13 s (backends/kafka/embedded/ghosts.go, TestKilledWhileJoining)")
		}
	})
	t.Logf("final FLUSH done after %s", time.Since(flushStart).Round(time.Millisecond))
	logRestores(t, victim, ctl)

	conn = connect(t, ctl)
	checkAll(t, c, d, conn, crashPipelines...)
	t.Logf("CRASH %s: rows=%d kills=%d wipes=%d modes=%v kill phase %s, total %s",
		t.Name(), rows, kills, wipes, modes, killPhase.Round(time.Second), time.Since(began).Round(time.Second))
}

// stagesOf is how many stages each crash pipeline has: the stateful ones
// re-key ev (8 partitions) into an internal topic first.
var stagesOf = map[string]int32{"s1": 1, "w1": 2, "w2": 2, "t3": 2, "v4": 2, "j5": 4, "j6": 3, "j7": 3, "n8": 4, "o9": 2, "c10": 2, "k11": 4, "i12": 6, "d13": 2, "f14": 2, "r15": 2, "r16": 2}

// joinStages names the stages of the join pipelines (the others' are s0, s1).
var joinStages = map[string][]string{"j5": {"left", "right", "join", "aggregate"}, "j6": {"left", "right", "join"}, "j7": {"left", "right", "join"}, "n8": {"sub1_s0", "sub1_s1", "s0", "s1"}, "k11": {"sub1_s0", "sub1_s1", "s0", "s1"},
	"i12": {"sub1_left", "sub1_right", "sub1_join", "left", "right", "join"}}

// ownsAll waits until the process owns every partition of every stage of
// the crash pipelines; when it does not, it describes the consumer groups
// (members and assignments) before failing.
func ownsAll(t *testing.T, c *cluster, p *fvsqltest.Process, timeout time.Duration) {
	t.Helper()
	conn := connect(t, p)
	defer conn.Close(context.Background())
	start := time.Now()
	last := ""
	for {
		m, err := allStats(conn)
		if err == nil {
			last = renderStats(m)
			all := true
			for _, name := range crashPipelines {
				all = all && m[name].Partitions == partitions*stagesOf[name]
			}
			if all {
				t.Logf("%s owns every partition after %s", p.Name(), time.Since(start).Round(time.Millisecond))
				return
			}
		} else {
			last = err.Error()
		}
		if time.Since(start) > timeout {
			break
		}
		time.Sleep(pollInterval)
	}
	describeGroups(t, c, crashGroups(c)...)
	if c.mode == "embedded" {
		t.Fatalf("BUG (embedded broker): %s, the only live process, does not own every partition %s after the other one died: %s. "+
			"The groups above hold members that no process runs any more (kfake keeps a member whose JoinGroup/SyncGroup response "+
			"could not be delivered; backends/kafka/embedded/ghosts.go should remove it after 13 s), and their partitions are never consumed", p.Name(), timeout, last)
	}
	t.Fatalf("%s does not own every partition %s after the other process died: %s", p.Name(), timeout, last)
}

// workingTimeout bounds how long a restarted victim may take to commit an
// epoch with input: group session timeout (10 s) plus a wide margin. The
// victim starts its 17 pipelines one after another, restoring their state
// from the checkpoint topics; with planner's tests beside it on two CPUs
// that took over 20 s (a CI run on 2026-12-07), so 30 s failed a victim
// that was only slow. A victim kept out by members of dead processes
// (what stalled reports) never commits, and still fails here.
const workingTimeout = 60 * time.Second

// stalled fails the test when the restarted victim committed nothing for
// workingTimeout while input waited, after describing the groups: more
// members than the live processes run means the broker keeps members of
// dead processes.
func stalled(t *testing.T, c *cluster, victim, ctl *fvsqltest.Process, waited time.Duration) {
	t.Helper()
	live := 2 // consumers per stage and process
	if victim != ctl {
		live = 4
	}
	most := describeGroups(t, c, crashGroups(c)...)
	var st string
	if m, err := pollStats(victim); err == nil {
		st = renderStats(m)
	}
	if most > live {
		label := ""
		if c.mode == "embedded" {
			label = "BUG (embedded broker): "
		}
		t.Fatalf("%sthe restarted victim %s committed no epoch with input within %s: a group has %d members while the live processes run %d consumers per stage; "+
			"the others belong to killed processes (see TestKilledWhileJoining) and hold partitions nobody consumes or block the rebalance; victim: %s",
			label, victim.Name(), waited.Round(time.Millisecond), most, live, st)
	}
	t.Fatalf("the restarted victim %s committed no epoch with input within %s (groups above); victim: %s", victim.Name(), waited.Round(time.Millisecond), st)
}

// crashGroups lists the consumer groups of the crash pipelines' stages.
func crashGroups(c *cluster) []string {
	var groups []string
	for _, name := range crashPipelines {
		if stages, ok := joinStages[name]; ok {
			for _, s := range stages {
				groups = append(groups, fmt.Sprintf("%sfvsql.%s.%s", c.prefix, name, s))
			}
			continue
		}
		for s := int32(0); s < stagesOf[name]; s++ {
			groups = append(groups, fmt.Sprintf("%sfvsql.%s.s%d", c.prefix, name, s))
		}
	}
	return groups
}

// waitWorking waits until p commits an epoch with input, or (the
// survivor having processed everything released while p restarted) owns
// partitions of every pipeline with no lag left once the producer wrote
// all it was released: then p has nothing to process, and a kill
// now is a kill of a working member.
func waitWorking(p *fvsqltest.Process, timeout time.Duration, allProduced func() bool) (time.Duration, bool) {
	start := time.Now()
	deadline := start.Add(timeout)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for time.Now().Before(deadline) {
		if conn == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			c, err := pgx.Connect(ctx, p.DSN())
			cancel()
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			conn = c
		}
		produced := allProduced()
		m, err := allStats(conn)
		if err != nil {
			conn.Close(context.Background())
			conn = nil
			continue
		}
		idle := produced && len(m) > 0
		for _, s := range m {
			if s.Epochs > 0 {
				return time.Since(start), true
			}
			idle = idle && s.Status == "RUNNING" && s.Partitions > 0 && s.Lag != nil && *s.Lag == 0
		}
		if idle {
			return time.Since(start), true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), false
}

// logRestores logs how the processes' partitions got their state.
func logRestores(t *testing.T, procs ...*fvsqltest.Process) {
	t.Helper()
	for _, p := range procs {
		lines := p.LogLines(func(l string) bool {
			return strings.Contains(l, "partition state restored from its checkpoint topic")
		})
		fails := p.LogLines(func(l string) bool {
			return strings.Contains(l, "pipeline consumer failed")
		})
		t.Logf("%s: %d state restores from checkpoint topics, %d consumer failures (all runs)", p.Name(), len(lines), len(fails))
	}
}
