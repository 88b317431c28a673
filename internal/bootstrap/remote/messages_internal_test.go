package remote

import (
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// sealers of one job: a rank's outgoing sealer and a receiver's.
func sealers(secret string, rank int) (out, in *sealer) {
	var ctr atomic.Uint64
	key := sealKey([]byte(secret), "job")
	return newSealer(key, rank, &ctr), newSealer(key, 0, new(atomic.Uint64))
}

func TestMessagesRoundTrip(t *testing.T) {
	for _, c := range []struct {
		k    kind
		from int
		v    any
	}{
		{kindJoin, 3, &join{Rank: 3, Addr: "127.0.0.1:5"}},
		{kindJoinAck, 0, &ack{Rank: 0}},
		{kindWelcome, 0, &welcome{Addrs: []string{"a:1", "b:2"}}},
		{kindContrib, 2, &contrib{Seq: 7, Rank: 2, Data: []byte{1, 2}}},
		{kindGathered, 0, &gathered{Seq: 7, Data: [][]byte{nil, {1}, {2, 3}}}},
		{kindLost, 0, &lost{Rank: 1, Reason: "x"}},
		{kindLeft, 0, &leaving{Rank: 1, Seq: 9}},
		{kindLeaving, 1, &leaving{Rank: 1, Seq: 9}},
		{kindPeerWatch, 2, &ack{Rank: 2}},
		{kindPeerLeaving, 3, &leaving{Rank: 3, Seq: 4}},
		{kindPeerLeaveAck, 1, &ack{Rank: 1}},
	} {
		out, in := sealers("a secret of the job", c.from)
		k, from, v, err := in.open(out.seal(c.k, c.v))
		if err != nil || k != c.k || from != c.from || !reflect.DeepEqual(v, c.v) {
			t.Errorf("%d %+v: got %d from %d %+v %v", c.k, c.v, k, from, v, err)
		}
	}
	for _, bad := range [][]byte{nil, {99}, {byte(kindJoin), 0xc1}} {
		_, in := sealers("a secret of the job", 0)
		if _, _, _, err := in.open(&wrapperspb.BytesValue{Value: bad}); err == nil {
			t.Errorf("open(%x): no error", bad)
		}
	}
}

// Whoever lacks the secret, replays, or speaks for another rank is refused.
func TestSealRefusals(t *testing.T) {
	out, in := sealers("a secret of the job", 2)
	intruder, _ := sealers("not the secret", 2)
	_, _, _, err := in.open(intruder.seal(kindLost, &lost{Rank: 1, Reason: "forged"}))
	require.ErrorIs(t, err, errSeal, "a message sealed with another secret")

	msg := out.seal(kindContrib, &contrib{Seq: 1, Rank: 2, Data: []byte{1}})
	_, _, _, err = in.open(msg)
	require.NoError(t, err)
	_, _, _, err = in.open(msg)
	require.ErrorIs(t, err, errSeal, "a replay")

	_, _, _, err = in.open(out.seal(kindContrib, &contrib{Seq: 2, Rank: 1}))
	require.ErrorIs(t, err, errSeal, "rank 2 speaking for rank 1")
	_, _, _, err = in.open(out.seal(kindLost, &lost{Rank: 1}))
	require.ErrorIs(t, err, errSeal, "a loss notice not from the coordinator")
	_, _, _, err = in.open(out.seal(kindPeerLeaving, &leaving{Rank: 1}))
	require.ErrorIs(t, err, errSeal, "rank 2 saying rank 1 leaves")

	tampered := out.seal(kindContrib, &contrib{Seq: 3, Rank: 2, Data: []byte{1}})
	tampered.Value[sealHeader+3] ^= 1
	_, _, _, err = in.open(tampered)
	require.ErrorIs(t, err, errSeal, "a changed byte")
}

// An error that names missing ranks stays one short line however many.
func TestRankListShort(t *testing.T) {
	many := make([]int, 100000)
	for i := range many {
		many[i] = i
	}
	if s := rankList(many); len(s) > 80 {
		t.Fatalf("rank list of %d bytes: %.100s", len(s), s)
	}
	if s := rankList([]int{1, 3}); s != "ranks [1 3]" {
		t.Fatalf("rankList([1 3]) = %q", s)
	}
}
