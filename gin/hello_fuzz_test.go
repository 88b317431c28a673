package gin

import "testing"

// FuzzReadHello: whatever another rank sends as its hello, readHello
// returns an error or a host, peers within the world and a processor set
// within its bound, and the checks that use them do not fail on it.
func FuzzReadHello(f *testing.F) {
	const size = 5
	c := &Comm{rank: 2, size: size, cfg: Config{Peers: []int{4, 0}}}
	if err := c.setPeers(); err != nil {
		f.Fatal(err)
	}
	f.Add(c.hello("h/boot", []byte{0x03}))
	f.Add((&Comm{rank: 1, size: size}).hello("h", nil))
	f.Add([]byte{1, 'a', 0, 0x81, 0x80, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := readHello(0, size, b)
		if err != nil {
			return
		}
		if len(h.cpus) > maxCPUSetBytes {
			t.Fatalf("a processor set of %d bytes passed", len(h.cpus))
		}
		for _, p := range h.peers {
			if p < 0 || p >= size {
				t.Fatalf("peer %d of a world of %d passed", p, size)
			}
		}
		if n := hostCPUs([][]byte{h.cpus}); n < 1 {
			t.Fatalf("hostCPUs %d", n)
		}
		sets := make([][]int, size)
		sets[0] = h.peers
		_ = checkSymmetric(sets)
	})
}
