package remote_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/bootstrap/remote"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

func init() { testutils.Role("intruded", roleIntruded) }

// A job whose control plane receives forged messages (no job secret) from
// a process that reaches it completes with correct results: no forged
// loss, leave, contribution or join takes effect.
func TestIntruderRefused(t *testing.T) {
	testutils.RunRanks(t, 4, "intruded")
}

// forge builds a control message as a sender without the job's secret
// would: the right layout (kind, sender, counter, msgpack body), a tag of
// random bytes.
func forge(kind byte, sender int, ctr uint64, body map[string]any) *wrapperspb.BytesValue {
	b := []byte{kind}
	b = binary.LittleEndian.AppendUint32(b, uint32(sender))
	b = binary.LittleEndian.AppendUint64(b, ctr)
	mp, _ := msgpack.Marshal(body)
	b = append(b, mp...)
	tag := make([]byte, 32)
	rand.Read(tag)
	return &wrapperspb.BytesValue{Value: append(b, tag...)}
}

// roleIntruded: rank 3 plays the intruder from its own control plane's
// actor system (the wire an outsider would use) before and during the
// job's collectives; every rank checks every result.
func roleIntruded() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.Rank() == 3 {
		sys := b.(remote.ActorSystemer).ActorSystem()
		coord := actor.NewPID(os.Getenv(bootstrap.EnvBootstrap), "rdmactor-bootstrap")
		for _, m := range []*wrapperspb.BytesValue{
			forge(6, 0, 1<<40, map[string]any{"r": 1, "w": "forged loss"}),       // kindLost
			forge(7, 2, 1<<40, map[string]any{"r": 2, "s": 0}),                   // kindLeaving
			forge(4, 0, 1<<40, map[string]any{"s": 1, "r": 0, "d": []byte("x")}), // kindContrib
			forge(1, 1, 1<<40, map[string]any{"r": 1, "a": "127.0.0.1:1"}),       // kindJoin
			{Value: []byte("junk")},
			{Value: []byte{4, 0xdd, 0xff, 0xff, 0xff, 0xff}},
		} {
			sys.Root.Send(coord, m)
			for r := range b.Size() {
				if addrs := b.(interface{ Addrs() []string }).Addrs(); r < len(addrs) {
					sys.Root.Send(actor.NewPID(addrs[r], "rdmactor-rank"), m)
				}
			}
		}
	}
	for round := range 20 {
		all, err := b.AllGather(ctx, []byte(fmt.Sprintf("%d-%d", b.Rank(), round)))
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		for r, d := range all {
			if string(d) != fmt.Sprintf("%d-%d", r, round) {
				return fmt.Errorf("round %d: rank %d's data is %q", round, r, d)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.Err(); err != nil {
		return errors.New("a loss was reported: " + err.Error())
	}
	return b.Barrier(ctx)
}
