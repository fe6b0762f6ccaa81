package kafka

import (
	"fmt"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms fvsql's clients speak, as Kafka names them.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// SASL is what a client authenticates to a cluster with; the zero value
// authenticates nothing.
type SASL struct {
	Mechanism string // one of the Mechanism* constants
	User      string
	Password  string
}

// Enabled says the credentials are set.
func (s SASL) Enabled() bool { return s.Mechanism != "" }

// Opts are the franz-go client options that authenticate with s (none
// for the zero value). Every client fvsql makes of a cluster takes them.
func (s SASL) Opts() ([]kgo.Opt, error) {
	switch strings.ToUpper(s.Mechanism) {
	case "":
		return nil, nil
	case MechanismPlain:
		return []kgo.Opt{kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism())}, nil
	case MechanismSCRAMSHA256:
		return []kgo.Opt{kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism())}, nil
	case MechanismSCRAMSHA512:
		return []kgo.Opt{kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism())}, nil
	}
	return nil, pgerror.New(pgerror.InvalidParameterValue, "kafka: unknown SASL mechanism %q (use %s, %s or %s)",
		s.Mechanism, MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
}

// String names the mechanism and user, never the password.
func (s SASL) String() string {
	if !s.Enabled() {
		return "no SASL"
	}
	return fmt.Sprintf("SASL %s as %q", s.Mechanism, s.User)
}
