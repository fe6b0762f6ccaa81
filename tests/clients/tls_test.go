package clients

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestTLS: --tls-self-signed --tls-mode require makes a certificate into
// the data dir that verifies (sslmode=verify-full with it as the root, by
// pgx and by the real psql), refuses plaintext with FATAL 28000, and keeps
// the certificate across a restart; --tls-cert/--tls-key serve a given
// certificate and, in the default prefer mode, plaintext too.
func TestTLS(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{Name: "tls", SSLMode: "require",
		Args: []string{"--tls-self-signed", "--tls-mode", "require"}})
	conn := p.Connect(t)
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("sslmode=require connection is %T, not TLS", conn.PgConn().Conn())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, "CREATE STREAM tl (a BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO tl VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(p.DataDir(), "tls", "server.crt")
	before, err := os.ReadFile(root)
	if err != nil {
		t.Fatalf("the self-signed certificate: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(p.DataDir(), "tls", "server.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
	dsn := func(host, mode string) string {
		_, port, _ := strings.Cut(p.Addr(), ":")
		return "postgres://fvsql@" + host + ":" + port + "/fvsql?sslmode=" + mode + "&sslrootcert=" + root + "&connect_timeout=5"
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		c, err := pgx.Connect(ctx, dsn(host, "verify-full"))
		if err != nil {
			t.Fatalf("verify-full to %s: %v", host, err)
		}
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM tl").Scan(&n); err != nil || n != 2 {
			t.Errorf("over verify-full to %s: %d %v", host, n, err)
		}
		c.Close(ctx)
	}
	_, err = pgx.Connect(ctx, dsn("127.0.0.1", "disable"))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" {
		t.Fatalf("plaintext against --tls-mode require: %v, want 28000", err)
	}
	if psql, err := exec.LookPath("psql"); err == nil {
		out, err := exec.CommandContext(ctx, psql, "-X", "-At", "-c", "SELECT count(*) FROM tl", dsn("localhost", "verify-full")).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "2" {
			t.Errorf("psql sslmode=verify-full: %v: %s", err, out)
		}
		out, err = exec.CommandContext(ctx, psql, "-X", "-At", "-c", "SELECT 1", dsn("127.0.0.1", "disable")).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "requires TLS") {
			t.Errorf("psql sslmode=disable against require: %v: %s", err, out)
		}
	} else if os.Getenv("CI") != "" {
		t.Fatal("psql is not installed")
	}

	// A restart keeps the certificate that clients may have pinned.
	p.Stop(t)
	p.Restart(t)
	p.Connect(t)
	if after, err := os.ReadFile(root); err != nil || string(after) != string(before) {
		t.Errorf("the certificate changed across a restart (%v)", err)
	}

	// The same pair given as --tls-cert/--tls-key, default mode prefer:
	// TLS when asked, plaintext too.
	q := fvsqltest.Start(t, fvsqltest.Config{Name: "tlsfiles",
		Args: []string{"--tls-cert", root, "--tls-key", filepath.Join(p.DataDir(), "tls", "server.key")}})
	plain := q.Connect(t)
	if _, ok := plain.PgConn().Conn().(*tls.Conn); ok {
		t.Error("sslmode=disable connection is TLS")
	}
	_, port, _ := strings.Cut(q.Addr(), ":")
	c, err := pgx.Connect(ctx, "postgres://fvsql@localhost:"+port+"/fvsql?sslmode=verify-full&sslrootcert="+root)
	if err != nil {
		t.Fatalf("verify-full with --tls-cert: %v", err)
	}
	if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
		t.Error("verify-full connection is not TLS")
	}
	c.Close(ctx)
}
