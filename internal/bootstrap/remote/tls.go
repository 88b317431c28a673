package remote

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// EnvControlTLS set to 1 encrypts the control plane on loopback too; it is
// encrypted whenever the bootstrap address is not a loopback address.
const EnvControlTLS = "RDMACTOR_CONTROL_TLS"

// wantTLS reports whether the control plane of cfg is encrypted.
func wantTLS(cfg Config) bool {
	if os.Getenv(EnvControlTLS) == "1" {
		return true
	}
	host, _, _ := net.SplitHostPort(cfg.Addr)
	ip := net.ParseIP(host)
	return host != "localhost" && (ip == nil || !ip.IsLoopback())
}

// jobTLS is the control plane's TLS configuration (TLS 1.3, both ways):
// every rank derives the same Ed25519 key from the job's secret and
// presents a self-signed certificate for it, and accepts a peer only if
// its certificate carries that key. The key is the job's identity: a
// certificate authority adds nothing that the secret does not already
// prove, and a process without the secret cannot complete a handshake.
func jobTLS(secret []byte, job string) (*tls.Config, error) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("rdmactor control plane tls v1\x00" + job))
	key := ed25519.NewKeyFromSeed(m.Sum(nil))
	pub := key.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
		DNSNames:     []string{"rdmactor-" + job},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: control plane certificate: %w", err)
	}
	pinned := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("bootstrap: peer presented no certificate")
		}
		c, err := x509.ParseCertificate(raw[0])
		if err != nil {
			return fmt.Errorf("bootstrap: peer certificate: %w", err)
		}
		if k, ok := c.PublicKey.(ed25519.PublicKey); !ok || !bytes.Equal(k, pub) {
			return errors.New("bootstrap: peer certificate is not this job's (another secret)")
		}
		return nil
	}
	return &tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:            tls.RequireAnyClientCert,
		InsecureSkipVerify:    true, // the chain is not checked: VerifyPeerCertificate pins the key
		VerifyPeerCertificate: pinned,
	}, nil
}
