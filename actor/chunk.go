package actor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/mailbox"
)

// kindChunk carries a piece of a message too large for one frame. Body:
//
//	kind    u8       the message's frame kind (kindUser, kindSystem)
//	id      uvarint  the message's number among its sender's chunked ones
//	total   uvarint  the message body's length in bytes
//	off     uvarint  where this piece starts in it
//	data             the piece, to the end
//
// The pieces of one message leave one goroutine in order, and frames of one
// (sender, receiver) pair arrive in order, so a receiver sees them with
// rising off; pieces of other messages of the same sender may come between.
const kindChunk = 5

// chunkHeaderMax bounds a chunk header: a kind byte and three uvarints.
const chunkHeaderMax = 1 + 3*binary.MaxVarintLen64

// ErrMessageTooLarge is returned by sends (Tell, and in UndeliverableEvent
// for Send) of a message whose encoding exceeds Config.MaxMessage; the
// encoding stops at the limit, so such a message is never held whole.
var ErrMessageTooLarge = errors.New("message over the node's MaxMessage")

// chunkBufs pools the frame buffers of chunked sends.
var chunkBufs = sync.Pool{New: func() any { return new([]byte) }}

// sendChunks puts body (an encoded message of kind) to rank in pieces that
// fit the mailbox's frames. It waits for credit as put does.
func (n *Node) sendChunks(put func(int, mailbox.Kind, []byte) error, rank int, kind byte, body []byte) error {
	room := n.mb.Config().MaxFrame - mailbox.HeaderBytes - chunkHeaderMax
	id := n.chunkIDs.Add(1)
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	for off := 0; off < len(body); off += room {
		piece := body[off:min(off+room, len(body))]
		f := append((*bp)[:0], kind)
		f = binary.AppendUvarint(f, id)
		f = binary.AppendUvarint(f, uint64(len(body)))
		f = binary.AppendUvarint(f, uint64(off))
		f = append(f, piece...)
		*bp = f
		if err := put(rank, kindChunk, f); err != nil {
			return fmt.Errorf("piece at byte %d of a %d-byte message: %w", off, len(body), err)
		}
	}
	return nil
}

// partial is a message being reassembled from its chunks.
type partial struct {
	kind byte
	buf  []byte
	got  int
}

// reassembly is the receive loop's state of chunked messages, per sender;
// only the receive goroutine touches it.
type reassembly struct {
	bySender []map[uint64]*partial
	bytes    []int // buffered bytes per sender
}

// recvChunk adds a piece to its message and, with the last piece, delivers
// the message. A piece that does not fit what came before (a length over
// MaxMessage, a gap, more bytes than declared, too many bytes held for one
// sender) drops that message and reports it; the pair goes on.
func (n *Node) recvChunk(from int, body []byte) {
	r := reader{b: body}
	kind := r.byte()
	id := r.uvarint()
	total := r.uvarint()
	off := r.uvarint()
	if r.err != nil || (kind != kindUser && kind != kindSystem) {
		n.logs.warn(n.system, "malformed chunk dropped", "from", from, "bytes", len(body))
		return
	}
	data := r.b
	re := &n.chunks
	if re.bySender == nil {
		re.bySender, re.bytes = make([]map[uint64]*partial, n.size), make([]int, n.size)
	}
	m := re.bySender[from]
	if m == nil {
		m = map[uint64]*partial{}
		re.bySender[from] = m
	}
	p := m[id]
	fail := func(why string) {
		if p != nil {
			re.bytes[from] -= len(p.buf)
			delete(m, id)
		}
		n.dropIncoming(from, &wireMsg{}, nil, nil, fmt.Errorf("chunked message %d from rank %d: %s: %w", id, from, why, ErrUndecodable))
	}
	if p == nil {
		switch {
		case off != 0:
			fail(fmt.Sprintf("first piece at byte %d", off))
			return
		case total > uint64(n.cfg.MaxMessage):
			fail(fmt.Sprintf("%d bytes over MaxMessage %d", total, n.cfg.MaxMessage))
			return
		case re.bytes[from]+int(total) > maxHeldPerSender*n.cfg.MaxMessage:
			fail("too many bytes held for this sender")
			return
		}
		p = &partial{kind: kind, buf: make([]byte, total)}
		m[id] = p
		re.bytes[from] += int(total)
	}
	// The last piece comes again after the pair was held for the whole
	// message (Config.MaxInbound): it is in the buffer already.
	again := p.got == len(p.buf) && off+uint64(len(data)) == uint64(p.got) && kind == p.kind
	if !again && (off != uint64(p.got) || uint64(len(data)) > uint64(len(p.buf)-p.got) || kind != p.kind) {
		fail(fmt.Sprintf("piece at byte %d of %d bytes, %d expected", off, len(data), p.got))
		return
	}
	if !again {
		p.got += copy(p.buf[p.got:], data)
	}
	if p.got < len(p.buf) {
		return
	}
	if n.recvMessage(from, mailbox.Kind(p.kind), p.buf) {
		return // held: kept for the last piece's next coming
	}
	delete(m, id)
	re.bytes[from] -= len(p.buf)
}

// maxHeldPerSender bounds the partly received messages of one sender, in
// MaxMessage units: a sender's goroutines each chunk one message at a time.
const maxHeldPerSender = 4

// forgetChunks drops the partial messages of a rank that left.
func (n *Node) forgetChunks(from int) {
	if re := &n.chunks; re.bySender != nil && re.bySender[from] != nil {
		re.bySender[from] = nil
		re.bytes[from] = 0
	}
}
