package pgwire

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var testUsers = map[string]string{"fvsql": "s3cret", "alice": "wonder land", "ünï": "pässwörd"}

func TestPgxAuthMethods(t *testing.T) {
	for _, method := range []string{AuthPassword, AuthMD5, AuthSCRAMSHA256} {
		t.Run(method, func(t *testing.T) {
			h := newTestHandler()
			_, addr := startServer(t, Config{Auth: method, Users: testUsers}, h)
			ctx := testCtx(t)
			for user, password := range testUsers {
				cfg, err := pgx.ParseConfig(connString(addr, "x", ""))
				if err != nil {
					t.Fatal(err)
				}
				cfg.User, cfg.Password = user, password
				conn, err := pgx.ConnectConfig(ctx, cfg)
				if err != nil {
					t.Fatalf("user %q: %v", user, err)
				}
				var n int64
				if err := conn.QueryRow(ctx, "SELECT 1").Scan(&n, new(string)); err != nil {
					t.Fatal(err)
				}
				conn.Close(ctx)
			}
			for _, tc := range []struct{ user, password string }{
				{"fvsql", "wrong"},
				{"fvsql", ""},
				{"nobody", "s3cret"}, // unknown users fail like a bad password
			} {
				cfg, _ := pgx.ParseConfig(connString(addr, "x", ""))
				cfg.User, cfg.Password = tc.user, tc.password
				_, err := pgx.ConnectConfig(ctx, cfg)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) {
					if tc.password == "" && method != AuthSCRAMSHA256 {
						continue // pgx refuses to send an empty password itself
					}
					t.Fatalf("%+v: want 28P01, got %v", tc, err)
				}
				if pe.Code != pgerror.InvalidPassword.String() || pe.Severity != "FATAL" ||
					pe.Message != `password authentication failed for user "`+tc.user+`"` {
					t.Errorf("%+v: %+v", tc, pe)
				}
			}
			if n := len(h.sessions); n != len(testUsers) {
				t.Errorf("%d sessions for %d good logins", n, len(testUsers))
			}
		})
	}
}

func TestTrustIgnoresPassword(t *testing.T) {
	_, addr := startServer(t, Config{Auth: AuthTrust}, newTestHandler())
	conn, err := pgx.Connect(testCtx(t), "postgres://anyone:whatever@"+addr+"/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(testCtx(t))
}

func TestNewServerValidates(t *testing.T) {
	h := newTestHandler()
	for _, cfg := range []Config{
		{Auth: "kerberos"},
		{Auth: AuthMD5},
		{MaxMessageSize: -1},
		{MaxMessageSize: 10},
		{AuthTimeout: -time.Second},
	} {
		if _, err := NewServer(cfg, h); err == nil {
			t.Errorf("NewServer(%+v) accepted", cfg)
		}
	}
	if _, err := NewServer(Config{}, nil); err == nil {
		t.Error("nil handler accepted")
	}
}

func TestAuthTimeout(t *testing.T) {
	_, addr := startServer(t, Config{Auth: AuthMD5, Users: testUsers, AuthTimeout: 100 * time.Millisecond}, newTestHandler())
	c := dialRaw(t, addr)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "fvsql"}})
	if _, ok := c.recv().(*pgproto3.AuthenticationMD5Password); !ok {
		t.Fatal("no MD5 challenge")
	}
	start := time.Now()
	c.expectClosed() // never answered: the server gives up
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closed after %v", d)
	}
}

func TestMalformedSCRAM(t *testing.T) {
	_, addr := startServer(t, Config{Auth: AuthSCRAMSHA256, Users: testUsers}, newTestHandler())
	for name, data := range map[string]string{
		"channel binding": "p=tls-server-end-point,,n=,r=abc",
		"authzid":         "n,a=bob,n=,r=abc",
		"no nonce":        "n,,n=",
		"garbage":         "hello",
	} {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, addr)
			c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "fvsql"}})
			if _, ok := c.recv().(*pgproto3.AuthenticationSASL); !ok {
				t.Fatal("no SASL request")
			}
			c.send(&pgproto3.SASLInitialResponse{AuthMechanism: scramMechanism, Data: []byte(data)})
			m := c.recv()
			if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Severity != "FATAL" || (e.Code != pgerror.ProtocolViolation.String() && e.Code != pgerror.FeatureNotSupported.String()) {
				t.Fatalf("got %s", describe(m))
			}
			c.expectClosed()
		})
	}
	// A wrong mechanism.
	c := dialRaw(t, addr)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "fvsql"}})
	c.recv()
	c.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS", Data: []byte("p=tls-server-end-point,,n=,r=abc")})
	if e, ok := c.recv().(*pgproto3.ErrorResponse); !ok || e.Code != pgerror.ProtocolViolation.String() {
		t.Fatalf("got %v", e)
	}
}

func TestMD5Response(t *testing.T) {
	// PostgreSQL stores md5("postgres"+"postgres") as md53175bce1d3201d16594cebf9d7eb3f9d;
	// the salted answer is md5 of that hash's hex and the salt.
	if got := md5Response("alice", "secret", [4]byte{1, 2, 3, 4}); got != "md598a0412b9c31436fc53776e863350083" {
		t.Errorf("md5Response = %s", got)
	}
}

// TestSCRAMVector checks the SCRAM computations against RFC 7677's
// SCRAM-SHA-256 example.
func TestSCRAMVector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	storedKey, serverKey, err := scramKeys("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	const clientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	const serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	const clientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	gs2, bare, nonce, err := parseClientFirst(clientFirst)
	if err != nil || gs2 != "n,," || bare != "n=user,r=rOprNGfwEbeRWgbNEkqO" || nonce != "rOprNGfwEbeRWgbNEkqO" {
		t.Fatalf("parseClientFirst: %q %q %q %v", gs2, bare, nonce, err)
	}
	withoutProof, proof, err := parseClientFinal(clientFinal, gs2, "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
	if err != nil {
		t.Fatal(err)
	}
	authMessage := bare + "," + serverFirst + "," + withoutProof
	if !verifyClientProof(storedKey, authMessage, proof) {
		t.Fatal("the RFC's proof does not verify")
	}
	proof[0] ^= 1
	if verifyClientProof(storedKey, authMessage, proof) {
		t.Fatal("a wrong proof verifies")
	}
	sig := base64.StdEncoding.EncodeToString(hmacSHA256(serverKey, authMessage))
	if sig != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Errorf("server signature = %s", sig)
	}
	if _, _, err := parseClientFinal("c=eSws,r=x,p="+base64.StdEncoding.EncodeToString(make([]byte, 32)), "n,,", "x"); err == nil {
		t.Error("a channel binding mismatch passes")
	}
}

// selfSignedCert makes a certificate for 127.0.0.1.
func selfSignedCert(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "fvsql test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestListenAndServeAddr(t *testing.T) {
	h := newTestHandler()
	s, err := NewServer(Config{Addr: "127.0.0.1:0", Logger: testLogger()}, h)
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != nil {
		t.Error("Addr before Serve")
	}
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe() }()
	waitFor(t, "the listener", func() bool { return s.Addr() != nil })
	conn := connectPgx(t, s.Addr().String(), "")
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&n, new(string)); err != nil || n != 1 {
		t.Fatal(err)
	}
	conn.Close(testCtx(t))
	s.Close()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}
