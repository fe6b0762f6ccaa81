package fvsqltest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fvsql/fvsql/tests/testenv"
)

// Environment of a private Apache Kafka broker (StartKafka). The test
// command ./scripts/test.sh exports them.
const (
	// KafkaLibsEnv is the directory of the Apache Kafka broker jars
	// (scripts/test.sh: ~/.cache/fvsql/kafka-<version>/libs).
	KafkaLibsEnv = "FVSQL_KAFKA_LIBS"
	// KafkaJavaEnv is the java binary to run the broker with; default
	// $JAVA_HOME/bin/java, else java on PATH.
	KafkaJavaEnv = "FVSQL_KAFKA_JAVA"
)

const (
	// KafkaStartTimeout bounds how long a private broker may take to
	// answer Metadata (with an active controller) and ApiVersions.
	KafkaStartTimeout = 90 * time.Second
	// KafkaStopTimeout bounds a private broker's controlled shutdown
	// after SIGTERM; it is then killed.
	KafkaStopTimeout = 60 * time.Second
)

// Kafka is a private single-node KRaft Apache Kafka broker that a test
// starts from the jars in $FVSQL_KAFKA_LIBS, written like the one
// scripts/test.sh starts, and that it can stop and start again on the same
// ports and log directory (e.g. to take the broker away under a running
// pipeline).
type Kafka struct {
	t       testing.TB
	java    string
	libs    string
	log4j   string
	dir     string
	props   string
	port    int
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// StartKafka formats and starts a private broker on two free loopback
// ports and waits until it answers. Without $FVSQL_KAFKA_LIBS the test is
// skipped, or fails when the CI environment variable is set (like
// testenv). The broker is killed when the test ends and its log is
// printed if the test failed.
func StartKafka(t testing.TB) *Kafka {
	t.Helper()
	libs := strings.TrimSpace(os.Getenv(KafkaLibsEnv))
	if libs == "" {
		if ci := os.Getenv("CI"); ci != "" {
			t.Fatalf("%s is not set but CI=%q: CI must run this test with a private Kafka broker; run it through ./scripts/test.sh", KafkaLibsEnv, ci)
		}
		t.Skip("set " + KafkaLibsEnv + " to the Apache Kafka broker jars to run this test (./scripts/test.sh does)")
	}
	if _, err := os.Stat(libs); err != nil {
		t.Fatalf("%s: %v", KafkaLibsEnv, err)
	}
	java := os.Getenv(KafkaJavaEnv)
	if java == "" && os.Getenv("JAVA_HOME") != "" {
		java = filepath.Join(os.Getenv("JAVA_HOME"), "bin", "java")
	}
	if java == "" {
		java = "java"
	}
	jpath, err := exec.LookPath(java)
	if err != nil {
		t.Fatalf("private Kafka broker: java not found (%s, $JAVA_HOME or PATH): %v", KafkaJavaEnv, err)
	}
	k := &Kafka{t: t, java: jpath, libs: libs}
	if goBin, err := exec.LookPath("go"); err == nil {
		if root, err := moduleRoot(goBin); err == nil {
			if p := filepath.Join(root, "scripts", "kafka", "log4j2.properties"); fileExists(p) {
				k.log4j = p
			}
		}
	}
	k.dir, err = os.MkdirTemp(t.TempDir(), "kafka-")
	if err != nil {
		t.Fatal(err)
	}
	k.logPath = filepath.Join(k.dir, "kafka.log")
	k.port = testenv.FreePort(t)
	cport := testenv.FreePort(t)
	k.props = filepath.Join(k.dir, "server.properties")
	// The configuration of scripts/test.sh's broker.
	props := fmt.Sprintf(`# Single-node KRaft test broker written by tests/fvsqltest.
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=127.0.0.1:%[2]d
log.dirs=%[3]s
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true
log.cleaner.enable=true
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
`, k.port, cport, filepath.Join(k.dir, "data"))
	if err := os.WriteFile(k.props, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keepLog(t, k.logPath, "kafka") }) // runs after cleanup
	t.Cleanup(k.cleanup)
	k.format(t)
	k.Start(t)
	return k
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (k *Kafka) javaArgs(heap []string, main string, args ...string) []string {
	out := append([]string{}, heap...)
	if k.log4j != "" {
		out = append(out, "-Dlog4j2.configurationFile="+k.log4j)
	}
	out = append(out, "-Djava.awt.headless=true", "-cp", filepath.Join(k.libs, "*"), main)
	return append(out, args...)
}

// format writes the KRaft storage with a random cluster id.
func (k *Kafka) format(t testing.TB) {
	t.Helper()
	var cid string
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		// Like Kafka's Uuid.randomUuid: never one starting with '-'.
		if cid = base64.RawURLEncoding.EncodeToString(b[:]); !strings.HasPrefix(cid, "-") {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.java, k.javaArgs([]string{"-Xmx256m"}, "kafka.tools.StorageTool",
		"format", "--standalone", "--cluster-id", cid, "--config", k.props)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("private Kafka broker: kafka-storage format: %v\n%s", err, out)
	}
}

// Addr is the broker's bootstrap address (the same across restarts).
func (k *Kafka) Addr() string { return "127.0.0.1:" + strconv.Itoa(k.port) }

// LogPath is the broker's log (all runs).
func (k *Kafka) LogPath() string { return k.logPath }

// Running reports whether the broker process has not exited.
func (k *Kafka) Running() bool {
	k.mu.Lock()
	exited := k.exited
	k.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Start starts the broker (again, after Stop or Kill: same ports, same log
// directory) and waits until it answers.
func (k *Kafka) Start(t testing.TB) {
	t.Helper()
	if k.Running() {
		t.Fatalf("private Kafka broker: start while it is running")
	}
	logFile, err := os.OpenFile(k.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	heap := strings.Fields(os.Getenv("KAFKA_HEAP_OPTS"))
	if len(heap) == 0 {
		heap = []string{"-Xmx512m", "-Xms512m"}
	}
	heap = append(heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError")
	k.mu.Lock()
	k.starts++
	n := k.starts
	k.mu.Unlock()
	fmt.Fprintf(logFile, "=== fvsqltest: start #%d of the private Kafka broker at %s\n", n, time.Now().Format("15:04:05.000"))
	cmd := exec.Command(k.java, k.javaArgs(heap, "kafka.Kafka", k.props)...)
	cmd.Dir = k.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("private Kafka broker: %v", err)
	}
	exited := make(chan struct{})
	k.mu.Lock()
	k.cmd, k.exited = cmd, exited
	k.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), KafkaStartTimeout)
	defer cancel()
	if err := k.WaitReady(ctx); err != nil {
		t.Fatalf("private Kafka broker (start #%d, pid %d): %v\n%s", n, cmd.Process.Pid, err, tail(k.logPath, 40))
	}
	t.Logf("private Kafka broker: start #%d (pid %d) at %s ready after %s", n, cmd.Process.Pid, k.Addr(), time.Since(start).Round(time.Millisecond))
}

// WaitReady waits until the broker answers Metadata with an active
// controller and ApiVersions, or ctx ends, or the broker exits.
func (k *Kafka) WaitReady(ctx context.Context) error {
	var lastErr error
	for {
		k.mu.Lock()
		exited := k.exited
		k.mu.Unlock()
		select {
		case <-exited:
			return errors.New("the broker exited")
		default:
		}
		if lastErr = probeKafka(ctx, k.Addr()); lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %v (last error: %v)", ctx.Err(), lastErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func probeKafka(parent context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second), kgo.RequestRetries(0), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(meta.Brokers) == 0 || meta.Controller < 0 {
		return errors.New("no broker or no active controller yet")
	}
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("api versions: %w", err)
	}
	for _, v := range versions.Sorted() {
		if v.Err != nil {
			return fmt.Errorf("api versions of broker %d: %w", v.NodeID, v.Err)
		}
	}
	return nil
}

// Stop shuts the broker down with SIGTERM (a controlled shutdown) and
// waits for it to exit; after KafkaStopTimeout it is killed.
func (k *Kafka) Stop(t testing.TB) {
	t.Helper()
	k.end(t, syscall.SIGTERM)
}

// Kill kills the broker with SIGKILL and waits for it to exit.
func (k *Kafka) Kill(t testing.TB) {
	t.Helper()
	k.end(t, syscall.SIGKILL)
}

func (k *Kafka) end(t testing.TB, sig syscall.Signal) {
	t.Helper()
	k.mu.Lock()
	cmd, exited := k.cmd, k.exited
	k.mu.Unlock()
	if cmd == nil {
		return
	}
	start := time.Now()
	_ = signal(cmd.Process, sig)
	select {
	case <-exited:
	case <-time.After(KafkaStopTimeout):
		_ = signal(cmd.Process, syscall.SIGKILL)
		<-exited
		t.Logf("private Kafka broker (pid %d) did not exit within %s of %v: killed it", cmd.Process.Pid, KafkaStopTimeout, sig)
	}
	t.Logf("private Kafka broker: pid %d ended by %v in %s", cmd.Process.Pid, sig, time.Since(start).Round(time.Millisecond))
}

func (k *Kafka) cleanup() {
	k.mu.Lock()
	cmd, exited := k.cmd, k.exited
	k.mu.Unlock()
	if cmd != nil {
		select {
		case <-exited:
		default:
			_ = signal(cmd.Process, syscall.SIGKILL)
			select {
			case <-exited:
			case <-time.After(StopTimeout):
				k.t.Errorf("private Kafka broker (pid %d) did not exit after SIGKILL", cmd.Process.Pid)
			}
		}
	}
	if k.t.Failed() {
		warn := []string{}
		if b, err := os.ReadFile(k.logPath); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, " ERROR ") || strings.Contains(l, " WARN ") || strings.HasPrefix(l, "=== fvsqltest") {
					warn = append(warn, l)
				}
			}
		}
		if len(warn) > logWarnLines {
			warn = warn[len(warn)-logWarnLines:]
		}
		k.t.Logf("private Kafka broker: starts, warnings and errors of %s:\n%s", k.logPath, strings.Join(warn, "\n"))
		k.t.Logf("private Kafka broker: last %d lines of %s:\n%s", logTailLines, k.logPath, tail(k.logPath, logTailLines))
	}
}
