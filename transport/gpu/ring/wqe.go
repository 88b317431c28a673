package ring

import (
	"encoding/binary"
	"fmt"
)

// WQE is one decoded descriptor (64 bytes on the ring, little endian).
type WQE struct {
	Seq         uint64 // ring sequence number (the tag holds Seq+1)
	Op          Op
	Remote      Remote
	CounterInc  bool   // local action: tick Counter once complete
	ValueSize   uint8  // OpPutValue: 1, 2, 4 or 8
	Peer        uint32 // world rank
	Signal      uint32 // signal index for RemoteInc/RemoteAdd
	DstWindow   uint32 // window id
	SrcWindow   uint32 // window id (OpPut)
	Counter     uint32
	DstOff      uint64
	SrcOff      uint64
	Bytes       uint64 // OpPut, OpGet: length; OpPutValue: the value
	SignalValue uint64 // RemoteAdd: amount (RemoteInc: 1)
}

// Encode writes w into the 64 bytes of b, tagged with w.Seq+1.
func (w *WQE) Encode(b []byte) {
	_ = b[WQEBytes-1]
	le := binary.LittleEndian
	le.PutUint32(b[offTag:], uint32(w.Seq+1))
	b[offOp], b[offRemote], b[offValueSize] = byte(w.Op), byte(w.Remote), w.ValueSize
	b[offLocal] = 0
	if w.CounterInc {
		b[offLocal] = 1
	}
	le.PutUint32(b[offPeer:], w.Peer)
	le.PutUint32(b[offSignal:], w.Signal)
	le.PutUint32(b[offDstWindow:], w.DstWindow)
	le.PutUint32(b[offSrcWindow:], w.SrcWindow)
	le.PutUint32(b[offCounter:], w.Counter)
	le.PutUint32(b[offCounter+4:], 0)
	le.PutUint64(b[offDstOff:], w.DstOff)
	le.PutUint64(b[offSrcOff:], w.SrcOff)
	le.PutUint64(b[offBytesOrValue:], w.Bytes)
	le.PutUint64(b[offSignalValue:], w.SignalValue)
}

// TornError is returned by Reader.Poll when an entry below the doorbell
// does not carry its sequence's tag: the producer broke the protocol (or
// the layouts of the two sides differ).
type TornError struct {
	Seq uint64 // the sequence expected
	Tag uint32 // the tag found (want uint32(Seq+1))
}

func (e *TornError) Error() string {
	return fmt.Sprintf("ring entry %d: tag %#x, want %#x (entry not written before the doorbell)", e.Seq, e.Tag, uint32(e.Seq+1))
}

// Decode reads the WQE of sequence seq from b, checking its tag.
func Decode(b []byte, seq uint64) (WQE, error) {
	_ = b[WQEBytes-1]
	le := binary.LittleEndian
	if tag := le.Uint32(b[offTag:]); tag != uint32(seq+1) {
		return WQE{}, &TornError{Seq: seq, Tag: tag}
	}
	return WQE{
		Seq:         seq,
		Op:          Op(b[offOp]),
		Remote:      Remote(b[offRemote]),
		CounterInc:  b[offLocal] != 0,
		ValueSize:   b[offValueSize],
		Peer:        le.Uint32(b[offPeer:]),
		Signal:      le.Uint32(b[offSignal:]),
		DstWindow:   le.Uint32(b[offDstWindow:]),
		SrcWindow:   le.Uint32(b[offSrcWindow:]),
		Counter:     le.Uint32(b[offCounter:]),
		DstOff:      le.Uint64(b[offDstOff:]),
		SrcOff:      le.Uint64(b[offSrcOff:]),
		Bytes:       le.Uint64(b[offBytesOrValue:]),
		SignalValue: le.Uint64(b[offSignalValue:]),
	}, nil
}
