package server

import (
	"strings"
	"testing"
)

func TestTLSConfigOptions(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		o       TLSOptions
		tls     bool
		require bool
		err     string
	}{
		{o: TLSOptions{}, tls: false},
		{o: TLSOptions{Mode: "off", SelfSigned: true, DataDir: dir}, tls: false},
		{o: TLSOptions{SelfSigned: true, DataDir: dir}, tls: true},
		{o: TLSOptions{Mode: "require", SelfSigned: true, DataDir: dir}, tls: true, require: true},
		{o: TLSOptions{Mode: "require"}, err: "needs --tls-cert"},
		{o: TLSOptions{Mode: "sometimes"}, err: "want off, prefer or require"},
		{o: TLSOptions{CertFile: "a.crt"}, err: "go together"},
		{o: TLSOptions{CertFile: "a.crt", KeyFile: "a.key", SelfSigned: true}, err: "leave out"},
		{o: TLSOptions{CertFile: dir + "/none.crt", KeyFile: dir + "/none.key"}, err: "none.crt"},
	} {
		conf, req, err := TLSConfig(c.o)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: %v, want an error with %q", c.o, err, c.err)
			}
			continue
		}
		if err != nil || (conf != nil) != c.tls || req != c.require {
			t.Errorf("%+v: tls %v require %v err %v, want tls %v require %v", c.o, conf != nil, req, err, c.tls, c.require)
		}
	}
}
