package pgwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runPsql runs psql against addr and returns its stdout, stderr and error.
func runPsql(t *testing.T, addr, user, password string, extraEnv []string, args ...string) (string, string, error) {
	t.Helper()
	path, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-h", host, "-p", port, "-U", user, "-d", "fvsql", "-X", "-A", "-t", "-w"}, args...)...)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PGPASSFILE=" + t.TempDir() + "/none", "PGCONNECT_TIMEOUT=10", "LANG=C.UTF-8"}
	if password != "" {
		env = append(env, "PGPASSWORD="+password)
	}
	cmd.Env = append(env, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

func TestPsqlQueries(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	out, stderr, err := runPsql(t, addr, "fvsql", "", nil, "-c", "SELECT 3")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr)
	}
	if out != "1|row 1\n2|row 2\n3|row 3\n" {
		t.Errorf("output %q", out)
	}
	h.mu.Lock()
	if app := h.sessions[0].ApplicationName; app != "psql" {
		t.Errorf("application_name = %q", app)
	}
	h.mu.Unlock()

	// Every type in text form, then the NULL row.
	out, stderr, err = runPsql(t, addr, "fvsql", "", nil, "-c", "TYPES")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr)
	}
	var want []string
	for _, c := range typesRow {
		want = append(want, c.text)
	}
	wantOut := strings.Join(want, "|") + "\n" + strings.Repeat("|", len(typesRow)-1) + "\n"
	if out != wantOut {
		t.Errorf("output\n%q\nwant\n%q", out, wantOut)
	}

	// An error stops the statements after it.
	out, stderr, err = runPsql(t, addr, "fvsql", "", nil, "-c", "SELECT 1; FAIL 22012; SELECT 2")
	if err == nil {
		t.Fatal("psql succeeded")
	}
	if out != "1|row 1\n" || !strings.Contains(stderr, "ERROR:  failed on purpose: 22012") ||
		!strings.Contains(stderr, "DETAIL:  some detail") || !strings.Contains(stderr, "HINT:  some hint") {
		t.Errorf("stdout %q stderr %q", out, stderr)
	}

	// COPY TO STDOUT.
	out, stderr, err = runPsql(t, addr, "fvsql", "", nil, "-c", "COPY 2")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr)
	}
	if want := "1\ta\\tb\\\\c\\nd\\re\t\\N\n2\ta\\tb\\\\c\\nd\\re\t\\N\n"; out != want {
		t.Errorf("copy output %q, want %q", out, want)
	}

	// A notice and several commands through a script (-f).
	script := t.TempDir() + "/s.sql"
	os.WriteFile(script, []byte("BEGIN;\nSELECT 1;\nNOTICE;\nCOMMIT;\n"), 0o644)
	out, stderr, err = runPsql(t, addr, "fvsql", "", nil, "-f", script)
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr)
	}
	if out != "BEGIN\n1|row 1\nDO\nCOMMIT\n" || !strings.Contains(stderr, "NOTICE:  hello notice") {
		t.Errorf("stdout %q stderr %q", out, stderr)
	}
}

func TestPsqlPasswordMethods(t *testing.T) {
	for _, method := range []string{AuthPassword, AuthMD5, AuthSCRAMSHA256} {
		t.Run(method, func(t *testing.T) {
			_, addr := startServer(t, Config{Auth: method, Users: testUsers}, newTestHandler())
			out, stderr, err := runPsql(t, addr, "alice", "wonder land", nil, "-c", "SELECT 1")
			if err != nil {
				t.Fatalf("psql: %v\n%s", err, stderr)
			}
			if out != "1|row 1\n" {
				t.Errorf("output %q", out)
			}
			_, stderr, err = runPsql(t, addr, "alice", "wrong", nil, "-c", "SELECT 1")
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
				t.Fatalf("wrong password: %v", err)
			}
			if !strings.Contains(stderr, `password authentication failed for user "alice"`) {
				t.Errorf("stderr %q", stderr)
			}
			// No password at all: psql -w gives up.
			_, stderr, err = runPsql(t, addr, "alice", "", nil, "-c", "SELECT 1")
			if err == nil || !strings.Contains(stderr, "no password supplied") {
				t.Errorf("no password: %v %q", err, stderr)
			}
		})
	}
}

func TestPsqlTLS(t *testing.T) {
	cert := selfSignedCert(t)
	_, addr := startServer(t, Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, Auth: AuthSCRAMSHA256, Users: testUsers}, newTestHandler())
	out, stderr, err := runPsql(t, addr, "fvsql", "s3cret", []string{"PGSSLMODE=require"}, "-c", "SELECT 2")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr)
	}
	if out != "1|row 1\n2|row 2\n" {
		t.Errorf("output %q", out)
	}
}
