package pgwire

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
	"golang.org/x/text/secure/precis"
)

const (
	scramMechanism  = "SCRAM-SHA-256"
	scramIterations = 4096 // PostgreSQL's default scram_iterations
	scramSaltLen    = 16   // PostgreSQL's SCRAM_DEFAULT_SALT_LEN
	scramNonceLen   = 18   // PostgreSQL's SCRAM_RAW_NONCE_LEN
)

// authFailedError is the error for wrong credentials, unknown users
// included.
func authFailedError(user string) *pgerror.Error {
	return pgerror.New(pgerror.InvalidPassword, "password authentication failed for user %q", user)
}

// authenticate runs the configured authentication exchange. On failure it
// sends FATAL (28P01 for bad credentials, 08P01 for a broken exchange) and
// returns false; the caller closes the connection.
func (c *conn) authenticate(user string) bool {
	cfg := &c.srv.cfg
	if cfg.Auth == AuthTrust {
		return true
	}
	password, known := cfg.Users[user]
	var err error
	switch cfg.Auth {
	case AuthPassword:
		err = c.authCleartext(user, password, known)
	case AuthMD5:
		err = c.authMD5(user, password, known)
	case AuthSCRAMSHA256:
		err = c.authSCRAM(user, password, known)
	default:
		err = pgerror.New(pgerror.Internal, "unknown authentication method %q", cfg.Auth)
	}
	if err == nil {
		return true
	}
	var ioe *ioError
	if errors.As(err, &ioe) {
		// The client hung up, typically to ask its user for a password.
		c.log.Debug("pgwire: connection closed during authentication", "err", err)
		return false
	}
	pe := pgerror.Flatten(err)
	c.log.Info("pgwire: authentication failed", "method", cfg.Auth, "code", pe.Code, "err", pe.Message)
	c.sendError(pe, "FATAL")
	_ = c.w.flush()
	return false
}

// authReceive sends req, then reads the client's response of the kind
// authType announces.
func (c *conn) authReceive(req pgproto3.BackendMessage, authType uint32) (pgproto3.FrontendMessage, error) {
	if err := c.send(req); err != nil {
		return nil, &ioError{err}
	}
	if err := c.w.flush(); err != nil {
		return nil, &ioError{err}
	}
	if err := c.be.SetAuthType(authType); err != nil {
		return nil, err
	}
	msg, err := c.receive()
	if err != nil {
		var ioe *ioError
		if errors.As(err, &ioe) {
			return nil, err
		}
		return nil, protocolViolation(err)
	}
	return msg, nil
}

func (c *conn) receivePassword(req pgproto3.BackendMessage, authType uint32) (string, error) {
	msg, err := c.authReceive(req, authType)
	if err != nil {
		return "", err
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return "", pgerror.New(pgerror.ProtocolViolation, "expected password response, got %T", msg)
	}
	return pm.Password, nil
}

// authCleartext is the "password" method.
func (c *conn) authCleartext(user, password string, known bool) error {
	got, err := c.receivePassword(&pgproto3.AuthenticationCleartextPassword{}, pgproto3.AuthTypeCleartextPassword)
	if err != nil {
		return err
	}
	ok := subtle.ConstantTimeCompare([]byte(got), []byte(password)) == 1
	if !known || !ok || got == "" {
		return authFailedError(user)
	}
	return nil
}

// md5Response is what a client answers to an MD5 challenge:
// "md5" + hex(md5(hex(md5(password + user)) + salt)).
func md5Response(user, password string, salt [4]byte) string {
	inner := md5.Sum([]byte(password + user))
	h := md5.New()
	h.Write([]byte(hex.EncodeToString(inner[:])))
	h.Write(salt[:])
	return "md5" + hex.EncodeToString(h.Sum(nil))
}

// authMD5 is the "md5" method.
func (c *conn) authMD5(user, password string, known bool) error {
	var salt [4]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return err
	}
	got, err := c.receivePassword(&pgproto3.AuthenticationMD5Password{Salt: salt}, pgproto3.AuthTypeMD5Password)
	if err != nil {
		return err
	}
	want := md5Response(user, password, salt)
	ok := subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
	if !known || !ok || password == "" {
		return authFailedError(user)
	}
	return nil
}

// authSCRAM is the "scram-sha-256" method: SCRAM-SHA-256 (RFC 5802, RFC
// 7677) over SASL as PostgreSQL runs it. The user name inside the SCRAM
// messages is ignored (the startup user counts), channel binding is not
// offered (gs2 header "n,," or "y,,"), and an unknown user goes through the
// whole exchange before failing, like a wrong password.
func (c *conn) authSCRAM(user, password string, known bool) error {
	msg, err := c.authReceive(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{scramMechanism}}, pgproto3.AuthTypeSASL)
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return pgerror.New(pgerror.ProtocolViolation, "expected SASL response, got %T", msg)
	}
	if first.AuthMechanism != scramMechanism {
		return pgerror.New(pgerror.ProtocolViolation, "client selected an invalid SASL authentication mechanism")
	}
	gs2Header, clientFirstBare, clientNonce, err := parseClientFirst(string(first.Data))
	if err != nil {
		return err
	}

	var salt [scramSaltLen]byte
	var nonce [scramNonceLen]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return err
	}
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	fullNonce := clientNonce + base64.StdEncoding.EncodeToString(nonce[:])
	serverFirst := fmt.Sprintf("r=%s,s=%s,i=%d", fullNonce, base64.StdEncoding.EncodeToString(salt[:]), scramIterations)

	msg, err = c.authReceive(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)}, pgproto3.AuthTypeSASLContinue)
	if err != nil {
		return err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return pgerror.New(pgerror.ProtocolViolation, "expected SASL response, got %T", msg)
	}
	finalWithoutProof, proof, err := parseClientFinal(string(resp.Data), gs2Header, fullNonce)
	if err != nil {
		return err
	}

	storedKey, serverKey, err := scramKeys(password, salt[:], scramIterations)
	if err != nil {
		return err
	}
	authMessage := clientFirstBare + "," + serverFirst + "," + finalWithoutProof
	if !verifyClientProof(storedKey, authMessage, proof) || !known || password == "" {
		return authFailedError(user)
	}
	serverSignature := hmacSHA256(serverKey, authMessage)
	final := "v=" + base64.StdEncoding.EncodeToString(serverSignature)
	if err := c.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(final)}); err != nil {
		return &ioError{err}
	}
	return nil
}

func malformedSCRAM(format string, args ...any) error {
	return pgerror.New(pgerror.ProtocolViolation, "malformed SCRAM message").WithDetail(format, args...)
}

// parseClientFirst parses client-first-message:
// gs2-cbind-flag "," [authzid] "," client-first-message-bare, where the
// bare part is "n=" user ",r=" nonce ["," extensions].
func parseClientFirst(s string) (gs2Header, bare, nonce string, err error) {
	if s == "" {
		return "", "", "", malformedSCRAM("The message is empty.")
	}
	switch s[0] {
	case 'n', 'y':
		if len(s) < 2 || s[1] != ',' {
			return "", "", "", malformedSCRAM("Comma expected after the channel binding flag.")
		}
	case 'p':
		return "", "", "", malformedSCRAM("The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.")
	default:
		return "", "", "", malformedSCRAM("Unexpected channel-binding flag %q.", s[0])
	}
	rest := s[2:]
	if strings.HasPrefix(rest, "a=") {
		return "", "", "", pgerror.New(pgerror.FeatureNotSupported, "client uses authorization identity, but it is not supported")
	}
	if !strings.HasPrefix(rest, ",") {
		return "", "", "", malformedSCRAM("Comma expected after the authorization identity.")
	}
	gs2Header = s[:3]
	bare = rest[1:]
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") {
		return "", "", "", malformedSCRAM("Expected attribute \"n\".")
	}
	if !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) == 2 {
		return "", "", "", malformedSCRAM("Expected attribute \"r\".")
	}
	nonce = attrs[1][2:]
	for i := 0; i < len(nonce); i++ {
		if ch := nonce[i]; ch < 0x21 || ch > 0x7e {
			return "", "", "", malformedSCRAM("The nonce contains an invalid character.")
		}
	}
	return gs2Header, bare, nonce, nil
}

// parseClientFinal parses client-final-message:
// "c=" base64(gs2 header) ",r=" nonce ["," extensions] ",p=" base64(proof).
func parseClientFinal(s, gs2Header, nonce string) (withoutProof string, proof []byte, err error) {
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return "", nil, malformedSCRAM("Expected attribute \"p\".")
	}
	withoutProof = s[:i]
	proof, err = base64.StdEncoding.DecodeString(s[i+3:])
	if err != nil || len(proof) != sha256.Size {
		return "", nil, malformedSCRAM("Malformed proof in client-final-message.")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") {
		return "", nil, malformedSCRAM("Expected attribute \"c\".")
	}
	cb, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || !bytes.Equal(cb, []byte(gs2Header)) {
		return "", nil, pgerror.New(pgerror.ProtocolViolation, "SCRAM channel binding check failed")
	}
	if attrs[1] != "r="+nonce {
		return "", nil, malformedSCRAM("Nonce does not match.")
	}
	return withoutProof, proof, nil
}

// scramKeys derives the StoredKey and ServerKey of a password (what
// PostgreSQL keeps in pg_authid for a SCRAM verifier).
func scramKeys(password string, salt []byte, iterations int) (storedKey, serverKey []byte, err error) {
	salted, err := pbkdf2.Key(sha256.New, saslPrep(password), salt, iterations, sha256.Size)
	if err != nil {
		return nil, nil, err
	}
	clientKey := hmacSHA256(salted, "Client Key")
	sk := sha256.Sum256(clientKey)
	return sk[:], hmacSHA256(salted, "Server Key"), nil
}

// verifyClientProof checks a ClientProof: ClientKey = proof XOR
// HMAC(StoredKey, AuthMessage) must hash to StoredKey.
func verifyClientProof(storedKey []byte, authMessage string, proof []byte) bool {
	sig := hmacSHA256(storedKey, authMessage)
	if len(proof) != len(sig) {
		return false
	}
	clientKey := make([]byte, len(sig))
	for i := range sig {
		clientKey[i] = proof[i] ^ sig[i]
	}
	h := sha256.Sum256(clientKey)
	return subtle.ConstantTimeCompare(h[:], storedKey) == 1
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// saslPrep normalizes a password as SCRAM clients do (SASLprep, here via
// PRECIS OpaqueString); a password it rejects is used as is, as
// PostgreSQL does.
func saslPrep(password string) string {
	if p, err := precis.OpaqueString.String(password); err == nil {
		return p
	}
	return password
}
