package remote

import "testing"

// FuzzDecodeBody feeds arbitrary bodies of every kind to the control
// message decoder, as a member of the job that holds the secret could
// send them: it never panics, and every length it accepts was checked
// against the bytes present (msgpackcheck), so nothing is allocated for a
// length the body does not carry.
func FuzzDecodeBody(f *testing.F) {
	out, _ := sealers("a secret of the job", 2)
	for _, c := range []struct {
		k kind
		v any
	}{
		{kindJoin, &join{Rank: 3, Addr: "127.0.0.1:5"}},
		{kindJoinAck, &ack{Rank: 0}},
		{kindWelcome, &welcome{Addrs: []string{"a:1", "b:2"}}},
		{kindContrib, &contrib{Seq: 7, Rank: 2, Data: []byte{1, 2}}},
		{kindGathered, &gathered{Seq: 7, Data: [][]byte{nil, {1}, {2, 3}}}},
		{kindLost, &lost{Rank: 1, Reason: "x"}},
		{kindLeaving, &leaving{Rank: 1, Seq: 9}},
	} {
		b := out.seal(c.k, c.v).GetValue()
		f.Add(byte(c.k), b[sealHeader:len(b)-tagBytes])
	}
	f.Add(byte(kindGathered), []byte{0x92, 0x07, 0xdd, 0xff, 0xff, 0xff, 0xff}) // an array of 2^32-1 entries
	f.Fuzz(func(t *testing.T, k byte, body []byte) {
		v, err := decodeBody(kind(k), body)
		if err == nil && v == nil {
			t.Fatalf("kind %d: no error and no message", k)
		}
	})
}
