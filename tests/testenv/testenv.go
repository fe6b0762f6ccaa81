package testenv

import (
	"crypto/rand"
	"encoding/hex"
	mathrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	kafkaEnv = "FVSQL_TEST_KAFKA"
	redisEnv = "FVSQL_TEST_REDIS"
)

// Kafka returns the Kafka bootstrap brokers from FVSQL_TEST_KAFKA, as given
// (comma separated host:port list). When the variable is unset it skips the
// test, or fails it if the CI environment variable is non-empty.
func Kafka(t testing.TB) string {
	t.Helper()
	return service(t, kafkaEnv, "a Kafka broker")
}

// Redis returns the Redis server address (host:port) from FVSQL_TEST_REDIS.
// When the variable is unset it skips the test, or fails it if the CI
// environment variable is non-empty.
func Redis(t testing.TB) string {
	t.Helper()
	return service(t, redisEnv, "a Redis server")
}

func service(t testing.TB, env, what string) string {
	t.Helper()
	if addr := strings.TrimSpace(os.Getenv(env)); addr != "" {
		return addr
	}
	if ci := os.Getenv("CI"); ci != "" {
		t.Fatalf("%s is not set but CI=%q: CI must run this test against %s; run it through ./scripts/test.sh", env, ci, what)
	}
	t.Skip("set " + env + " to " + what + " to run this test (./scripts/test.sh does)")
	return ""
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that the kernel will not hand out on its own: it is drawn at random from
// below the ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), and
// probed by binding and closing it. A port from 127.0.0.1:0 would lie in that
// range, where any outgoing connection may take it as its source port; a
// server restarted on the same port (a private Kafka broker's controller, an
// fvsql process after kill -9) then fails to bind, as a CI run saw. No port
// is returned twice by one test process. Another process may still take the
// port before the caller binds it; callers that start a server should report
// a failed bind clearly.
func FreePort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	if low > minPort+1000 {
		for i := 0; i < 1000; i++ {
			port := minPort + mathrand.IntN(low-minPort)
			if claim(port) && probe(port) {
				return port
			}
		}
	}
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testenv: finding a free port on 127.0.0.1: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			t.Fatalf("testenv: closing probe listener on port %d: %v", port, err)
		}
		if claim(port) {
			return port
		}
	}
	t.Fatalf("testenv: no free port on 127.0.0.1")
	return 0
}

// minPort is the lowest port FreePort hands out, above the ports services
// commonly listen on (PostgreSQL's 5432, Redis's 6379, Kafka's 9092).
const minPort = 20000

var (
	portsMu sync.Mutex
	ports   = map[int]bool{}
)

// claim records port as handed out and reports whether it was not before.
func claim(port int) bool {
	portsMu.Lock()
	defer portsMu.Unlock()
	if ports[port] {
		return false
	}
	ports[port] = true
	return true
}

// probe reports whether 127.0.0.1:port can be bound now.
func probe(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	return l.Close() == nil
}

// ephemeralLow is the lowest port of the kernel's ephemeral range, or 32768
// (Linux's default) where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// UniqueName returns prefix followed by 16 random lowercase hex characters,
// for topics, consumer groups, Redis streams and keys of tests that share one
// service. The prefix should end with a separator, e.g.
// UniqueName("services-txn-"). Characters of prefix that are not allowed in a
// Kafka topic name ([a-zA-Z0-9._-]) are replaced by '-', so t.Name() may be
// used as a prefix, and the result is at most 249 characters, Kafka's limit.
func UniqueName(prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand.Read does not fail on supported platforms.
		panic("testenv: reading random bytes: " + err.Error())
	}
	clean := []byte(prefix)
	for i, c := range clean {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			clean[i] = '-'
		}
	}
	suffix := hex.EncodeToString(b[:])
	const maxTopicLen = 249
	if len(clean) > maxTopicLen-len(suffix) {
		clean = clean[:maxTopicLen-len(suffix)]
	}
	return string(clean) + suffix
}

// Tool returns the path in the environment variable env, a client or
// toolchain that scripts/test.sh installs (what describes it). When the
// variable is unset it skips the test, or fails it if the CI environment
// variable is non-empty.
func Tool(t testing.TB, env, what string) string {
	t.Helper()
	return service(t, env, what)
}
