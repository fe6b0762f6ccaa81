package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLS modes of the pgwire listener (--tls-mode).
const (
	TLSOff     = "off"     // SSLRequest is answered 'N'
	TLSPrefer  = "prefer"  // TLS offered, plaintext accepted
	TLSRequire = "require" // plaintext connections refused with FATAL 28000
)

// TLSOptions are the pgwire listener's TLS settings.
type TLSOptions struct {
	Mode       string // TLSOff, TLSPrefer, TLSRequire; "": prefer when a certificate is configured, else off
	CertFile   string // PEM certificate (chain); with KeyFile
	KeyFile    string // PEM private key
	SelfSigned bool   // without CertFile: use <data-dir>/tls/server.{crt,key}, made on first start
	DataDir    string
	// Hosts are the names and addresses a self-signed certificate is made
	// for, besides localhost, 127.0.0.1 and ::1 (the listen address's host).
	Hosts  []string
	Logger *slog.Logger
}

// SelfSignedCertFile and SelfSignedKeyFile are where TLSOptions.SelfSigned
// keeps its certificate, relative to the data dir. The certificate is its
// own root: a client verifies it (sslmode=verify-full) with
// sslrootcert=<data-dir>/tls/server.crt.
const (
	SelfSignedCertFile = "tls/server.crt"
	SelfSignedKeyFile  = "tls/server.key"
)

// TLSConfig resolves o into the listener's *tls.Config (nil: no TLS) and
// whether plaintext connections are refused.
func TLSConfig(o TLSOptions) (*tls.Config, bool, error) {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, false, errors.New("--tls-cert and --tls-key go together")
	}
	if o.CertFile != "" && o.SelfSigned {
		return nil, false, errors.New("--tls-self-signed makes its own certificate: leave out --tls-cert and --tls-key")
	}
	haveCert := o.CertFile != "" || o.SelfSigned
	mode := o.Mode
	switch mode {
	case "":
		mode = TLSOff
		if haveCert {
			mode = TLSPrefer
		}
	case TLSOff, TLSPrefer, TLSRequire:
	default:
		return nil, false, fmt.Errorf("--tls-mode %q: want off, prefer or require", o.Mode)
	}
	if mode == TLSOff {
		return nil, false, nil
	}
	if !haveCert {
		return nil, false, fmt.Errorf("--tls-mode %s needs --tls-cert and --tls-key, or --tls-self-signed", mode)
	}
	certFile, keyFile := o.CertFile, o.KeyFile
	if o.SelfSigned {
		certFile, keyFile = filepath.Join(o.DataDir, SelfSignedCertFile), filepath.Join(o.DataDir, SelfSignedKeyFile)
		if err := ensureSelfSigned(certFile, keyFile, o.Hosts, o.Logger); err != nil {
			return nil, false, err
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, false, fmt.Errorf("TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	if o.Logger != nil && len(cert.Certificate) > 0 {
		sum := sha256.Sum256(cert.Certificate[0])
		o.Logger.Info("pgwire TLS", "mode", mode, "cert", certFile, "sha256", hex.EncodeToString(sum[:]))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, mode == TLSRequire, nil
}

// ensureSelfSigned makes a self-signed certificate and its key at the
// given paths unless both exist (a restart keeps the certificate clients
// may have pinned).
func ensureSelfSigned(certFile, keyFile string, hosts []string, log *slog.Logger) error {
	_, certErr := os.Stat(certFile)
	_, keyErr := os.Stat(keyFile)
	if certErr == nil && keyErr == nil {
		return nil
	}
	if certErr == nil || keyErr == nil {
		return fmt.Errorf("self-signed TLS: only one of %s and %s exists; remove it to make a new pair", certFile, keyFile)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "fvsql", Organization: []string{"fvsql self-signed"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // its own root, for sslrootcert
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() && !ip.Equal(net.IPv4(127, 0, 0, 1)) && !ip.Equal(net.IPv6loopback) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "localhost" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o700); err != nil {
		return err
	}
	if err := writeFileSync(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	if err := writeFileSync(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	if log != nil {
		log.Info("made a self-signed TLS certificate", "cert", certFile, "key", keyFile, "dns", tmpl.DNSNames, "ips", fmt.Sprint(tmpl.IPAddresses))
	}
	return nil
}

// writeFileSync writes a new file through a temporary one, so that a crash
// never leaves half a key behind.
func writeFileSync(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
