package remote

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/msgpackcheck"
)

// Sealed control messages. Every message of the remote control plane
// carries its sender's rank, a counter that rises with each message the
// sender seals, and an HMAC-SHA256 tag (RFC 2104) under a key derived from
// the job's secret, which no message carries:
//
//	0      1          5           13          n-32        n
//	+------+----------+-----------+-----------+-----------+
//	| kind | sender   | counter   | msgpack   | tag       |
//	| u8   | u32 LE   | u64 LE    | body      | 32 bytes  |
//	+------+----------+-----------+-----------+-----------+
//
// A receiver checks the tag before anything else, then that the counter
// rises per sender (a replayed message is refused), then the body's
// lengths, then that the ranks the body names are the sender's own (a
// rank speaks only for itself; the coordinator's messages come from rank
// 0). Whoever lacks the secret can make none of them: a join, a forged
// loss or leave, a collective's data.

const (
	sealHeader = 13
	tagBytes   = sha256.Size
)

// errSeal is wrapped by every refusal of open.
var errSeal = errors.New("control message refused")

// sealer seals this rank's messages and opens those sent to one of its
// actors (each receiving actor has its own, for its own replay record).
type sealer struct {
	key  []byte
	rank int
	ctr  *atomic.Uint64 // shared by the rank's sealers: one counter per sender

	mu   sync.Mutex
	last map[int]uint64 // highest counter opened, per sender
}

// sealKey derives the MAC key of job from its secret (HMAC-SHA256 as a
// key derivation: the secret never keys a tag directly).
func sealKey(secret []byte, job string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("rdmactor control plane v1\x00" + job))
	return m.Sum(nil)
}

func newSealer(key []byte, rank int, ctr *atomic.Uint64) *sealer {
	return &sealer{key: key, rank: rank, ctr: ctr, last: map[int]uint64{}}
}

// seal wraps v, the struct of kind k, into a BytesValue.
func (s *sealer) seal(k kind, v any) *wrapperspb.BytesValue {
	var buf bytes.Buffer
	var h [sealHeader]byte
	h[0] = byte(k)
	binary.LittleEndian.PutUint32(h[1:], uint32(s.rank))
	binary.LittleEndian.PutUint64(h[5:], s.ctr.Add(1))
	buf.Write(h[:])
	if err := msgpack.NewEncoder(&buf).Encode(v); err != nil {
		// Only our own plain structs are encoded; failing is a bug.
		panic(fmt.Sprintf("bootstrap: encode %T: %v", v, err))
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(buf.Bytes())
	return &wrapperspb.BytesValue{Value: m.Sum(buf.Bytes())}
}

// open checks and decodes a sealed message: its kind, sender and struct.
func (s *sealer) open(bv *wrapperspb.BytesValue) (kind, int, any, error) {
	b := bv.GetValue()
	if len(b) < sealHeader+1+tagBytes {
		return 0, 0, nil, fmt.Errorf("%w: %d bytes", errSeal, len(b))
	}
	body, tag := b[:len(b)-tagBytes], b[len(b)-tagBytes:]
	m := hmac.New(sha256.New, s.key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), tag) {
		return 0, 0, nil, fmt.Errorf("%w: bad tag (not sealed with this job's secret)", errSeal)
	}
	k := kind(body[0])
	sender := int(binary.LittleEndian.Uint32(body[1:]))
	ctr := binary.LittleEndian.Uint64(body[5:])
	s.mu.Lock()
	if ctr <= s.last[sender] {
		s.mu.Unlock()
		return 0, 0, nil, fmt.Errorf("%w: counter %d from rank %d not above %d (a replay)", errSeal, ctr, sender, s.last[sender])
	}
	s.last[sender] = ctr
	s.mu.Unlock()
	v, err := decodeBody(k, body[sealHeader:])
	if err != nil {
		return 0, 0, nil, err
	}
	if claimed, ok := speaker(k, v); ok && claimed != sender {
		return 0, 0, nil, fmt.Errorf("%w: kind %d from rank %d speaks for rank %d", errSeal, k, sender, claimed)
	}
	return k, sender, v, nil
}

// speaker is the rank a message must come from: the rank it names for
// itself, or 0 for the coordinator's messages.
func speaker(k kind, v any) (int, bool) {
	switch m := v.(type) {
	case *join:
		return m.Rank, true
	case *contrib:
		return m.Rank, true
	case *leaving:
		if k == kindLeaving || k == kindPeerLeaving {
			return m.Rank, true
		}
		return 0, true // kindLeft: the coordinator relays it
	case *ack:
		if k == kindJoinAck || k == kindLeaveAck {
			return 0, true
		}
		return m.Rank, true
	case *shrinkMsg:
		return m.Rank, true
	case *groupContrib:
		return m.Rank, true
	case *groupLeaving:
		if k == kindGroupLeaving {
			return m.Rank, true
		}
		return 0, true // kindGroupLeft: the coordinator relays it
	case *welcome, *gathered, *lost, *bootstrap.Agreed, *groupGathered:
		return 0, true
	}
	return 0, false
}

// decodeBody decodes the msgpack body of kind k, its lengths checked first.
func decodeBody(k kind, b []byte) (any, error) {
	var v any
	switch k {
	case kindJoin:
		v = new(join)
	case kindJoinAck, kindLeaveAck, kindLeftAck, kindPeerWatch, kindPeerLeaveAck:
		v = new(ack)
	case kindWelcome:
		v = new(welcome)
	case kindContrib:
		v = new(contrib)
	case kindGathered:
		v = new(gathered)
	case kindLost:
		v = new(lost)
	case kindLeaving, kindLeft, kindPeerLeaving:
		v = new(leaving)
	case kindShrink:
		v = new(shrinkMsg)
	case kindAgreed:
		v = new(bootstrap.Agreed)
	case kindGroupContrib:
		v = new(groupContrib)
	case kindGroupGathered:
		v = new(groupGathered)
	case kindGroupLeaving, kindGroupLeft:
		v = new(groupLeaving)
	default:
		return nil, fmt.Errorf("decode control message: unknown kind %d", k)
	}
	if err := msgpackcheck.Check(b); err != nil {
		return nil, fmt.Errorf("decode control message kind %d: %w", k, err)
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("decode control message kind %d: %w", k, err)
	}
	return v, nil
}
