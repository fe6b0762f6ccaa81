package testenv

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fakeTB records Skip and Fatalf instead of ending a test.
type fakeTB struct {
	testing.TB
	skipped, fatal string
}

type stop struct{}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.skipped = fmt.Sprint(args...)
	panic(stop{})
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(stop{})
}

// call runs fn with a fake TB and returns what it returned and recorded.
func call(fn func(testing.TB) string) (got string, f *fakeTB) {
	f = &fakeTB{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
		}
	}()
	return fn(f), f
}

func TestServiceAddresses(t *testing.T) {
	for _, svc := range []struct {
		env string
		fn  func(testing.TB) string
	}{{"FVSQL_TEST_KAFKA", Kafka}, {"FVSQL_TEST_REDIS", Redis}} {
		t.Run(svc.env, func(t *testing.T) {
			t.Setenv(svc.env, " 127.0.0.1:1234 ")
			t.Setenv("CI", "true")
			if got, f := call(svc.fn); got != "127.0.0.1:1234" || f.skipped != "" || f.fatal != "" {
				t.Errorf("set: got %q, fake %+v", got, f)
			}

			t.Setenv(svc.env, "")
			t.Setenv("CI", "")
			_, f := call(svc.fn)
			want := "set " + svc.env + " to "
			if !strings.HasPrefix(f.skipped, want) || !strings.HasSuffix(f.skipped, "to run this test (./scripts/test.sh does)") || f.fatal != "" {
				t.Errorf("unset outside CI: fake %+v, want a skip starting %q", f, want)
			}

			t.Setenv("CI", "1")
			_, f = call(svc.fn)
			if !strings.Contains(f.fatal, svc.env+" is not set") || f.skipped != "" {
				t.Errorf("unset in CI: fake %+v, want a fatal error", f)
			}
		})
	}
}

func TestFreePort(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for i := 0; i < 50; i++ {
		port := FreePort(t)
		if port < minPort || port >= low {
			t.Fatalf("FreePort = %d, want a port in [%d, %d), below the ephemeral range", port, minPort, low)
		}
		if seen[port] {
			t.Fatalf("FreePort handed out %d twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d from FreePort is not bindable: %v", port, err)
		}
		l.Close()
	}
}

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
	seen := map[string]bool{}
	for range 100 {
		n := UniqueName("topic-")
		if !strings.HasPrefix(n, "topic-") || len(n) != len("topic-")+16 || !valid.MatchString(n) {
			t.Fatalf("UniqueName(topic-) = %q", n)
		}
		if seen[n] {
			t.Fatalf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
	if n := UniqueName("TestX/sub case#1:"); !strings.HasPrefix(n, "TestX-sub-case-1-") || !valid.MatchString(n) {
		t.Errorf("UniqueName with a test name = %q", n)
	}
	if n := UniqueName(strings.Repeat("x", 300)); len(n) != 249 {
		t.Errorf("UniqueName of a long prefix has length %d, want 249", len(n))
	}
}
