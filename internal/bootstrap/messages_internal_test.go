package bootstrap

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestMessagesRoundTrip(t *testing.T) {
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
		{kindLeft, &leaving{Rank: 1, Seq: 9}},
	} {
		k, v, err := decode(encode(c.k, c.v))
		if err != nil || k != c.k || !reflect.DeepEqual(v, c.v) {
			t.Errorf("%d %+v: got %d %+v %v", c.k, c.v, k, v, err)
		}
	}
	for _, bad := range [][]byte{nil, {99}, {byte(kindJoin), 0xc1}} {
		if _, _, err := decode(&wrapperspb.BytesValue{Value: bad}); err == nil {
			t.Errorf("decode(%x): no error", bad)
		}
	}
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
