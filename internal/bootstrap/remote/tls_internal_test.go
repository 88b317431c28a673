package remote

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// Ranks with the job's secret complete a handshake with each other; a
// peer with another secret does not, either way round.
func TestJobTLSPinsTheSecret(t *testing.T) {
	handshake := func(server, client []byte) error {
		sc, err := jobTLS(server, "job")
		if err != nil {
			t.Fatal(err)
		}
		cc, err := jobTLS(client, "job")
		if err != nil {
			t.Fatal(err)
		}
		a, b := net.Pipe()
		a.SetDeadline(time.Now().Add(5 * time.Second))
		b.SetDeadline(time.Now().Add(5 * time.Second))
		errs := make(chan error, 1)
		go func() {
			s := tls.Server(a, sc)
			errs <- s.Handshake()
			s.Close()
		}()
		c := tls.Client(b, cc)
		cerr := c.Handshake()
		c.Close()
		serr := <-errs
		if cerr != nil {
			return cerr
		}
		return serr
	}
	good := []byte("the secret of the job, 32 bytes!")
	if err := handshake(good, good); err != nil {
		t.Fatalf("same secret: %v", err)
	}
	if err := handshake(good, []byte("another secret, also 32 bytes..")); err == nil {
		t.Fatal("a client with another secret completed the handshake")
	}
	if err := handshake([]byte("another secret, also 32 bytes.."), good); err == nil {
		t.Fatal("a server with another secret completed the handshake")
	}
}
