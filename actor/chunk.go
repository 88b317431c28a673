package actor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/mailbox"
)

// kindChunk carries a piece of a message too large for one frame. Body:
//
//	kind    u8       the message's frame kind (kindUser, kindSystem), or
//	                 chunkAbort: the sender gave the message up
//	id      uvarint  the message's number among its sender's chunked ones
//	total   uvarint  the message body's length in bytes
//	off     uvarint  where this piece starts in it
//	data             the piece, to the end
//
// The pieces of one message leave one goroutine in order, and frames of one
// (sender, receiver) pair arrive in order, so a receiver sees them with
// rising off; pieces of other messages of the same sender may come between.
const kindChunk = 5

// chunkAbort in a piece's kind byte ends message id unfinished: its
// encoding failed, or the ring stayed full, after pieces of it were sent.
const chunkAbort = 0

// chunkHeaderMax bounds a chunk header: a kind byte and three uvarints.
const chunkHeaderMax = 1 + 3*binary.MaxVarintLen64

// pendMax is what a message sent in pieces gathers of its encoder's small
// writes before they go in a piece; a write that would pass it goes to
// the staging ring at once, copied there and nowhere else.
const pendMax = 64 << 10

// pieceLeast is the least room, in body bytes, a piece waits for while
// its message has more than that left: below it the sender waits for
// credit rather than put a small frame.
const pieceLeast = 64 << 10

// ErrMessageTooLarge is returned by sends (Tell, and in UndeliverableEvent
// for Send) of a message whose encoding exceeds Config.MaxMessage; the
// encoding stops at the limit, so such a message is never held whole.
var ErrMessageTooLarge = errors.New("message over the node's MaxMessage")

// errChanged is the error of a message whose encoding, sent in pieces,
// came out at another size than the pass that measured it.
var errChanged = errors.New("the message encoded to another size on its second pass")

// chunkOut sends one message to a rank in pieces, each written straight
// into the staging ring (mailbox.Mailbox.SendAppendRoom). It is the
// mailbox.BodyAppender of each piece: the piece takes the bytes the
// encoder gathered (pend) and then those of the write in hand (src).
type chunkOut struct {
	n     *Node
	rank  int
	kind  byte
	id    uint64
	total int // message bytes
	sent  int // message bytes put

	pend, src         []byte // of the piece being put
	fromPend, fromSrc int    // what the piece took of each
}

// AppendBody writes the piece's header and as much of pend, then src, as
// the room offered holds.
func (o *chunkOut) AppendBody(dst []byte) ([]byte, error) {
	f := append(dst, o.kind)
	f = binary.AppendUvarint(f, o.id)
	f = binary.AppendUvarint(f, uint64(o.total))
	f = binary.AppendUvarint(f, uint64(o.sent))
	room := min(cap(f)-len(f), o.total-o.sent)
	o.fromPend = min(room, len(o.pend))
	f = append(f, o.pend[:o.fromPend]...)
	o.fromSrc = min(room-o.fromPend, len(o.src))
	return append(f, o.src[:o.fromSrc]...), nil
}

// piece puts one piece of e.buf's bytes, then src's, and returns how many
// of src it took; e.buf keeps what the piece did not take.
func (o *chunkOut) piece(e *encoder, src []byte) (int, error) {
	left := o.total - o.sent
	least := min(pieceLeast, chunkHeaderMax+left, o.n.mb.Config().MaxFrame-mailbox.HeaderBytes)
	o.pend, o.src = e.buf, src
	err := o.n.mb.SendAppendRoom(o.rank, kindChunk, least, o)
	o.pend, o.src = nil, nil
	if err != nil {
		return 0, fmt.Errorf("piece at byte %d of a %d-byte message: %w", o.sent, o.total, err)
	}
	o.sent += o.fromPend + o.fromSrc
	e.flushed = o.sent
	e.buf = e.buf[:copy(e.buf, e.buf[o.fromPend:])]
	return o.fromSrc, nil
}

// write is the encoder's write of p when it would pass pendMax: what was
// gathered and p go out in pieces, but for a tail under pendMax that
// stays gathered.
func (o *chunkOut) write(e *encoder, p []byte) error {
	if o.sent+len(e.buf)+len(p) > o.total {
		return errChanged
	}
	for len(e.buf)+len(p) > pendMax {
		k, err := o.piece(e, p)
		if err != nil {
			return err
		}
		p = p[k:]
	}
	e.buf = append(e.buf, p...)
	return nil
}

// finish puts what is left of e.buf, then of rest.
func (o *chunkOut) finish(e *encoder, rest []byte) error {
	if o.sent+len(e.buf)+len(rest) != o.total {
		return errChanged
	}
	for len(e.buf)+len(rest) > 0 {
		k, err := o.piece(e, rest)
		if err != nil {
			return err
		}
		rest = rest[k:]
	}
	return nil
}

// sendLarge sends the message set in e, which one frame cannot hold, in
// pieces. A type encoded by msgpack (by reflection or custom methods) is
// encoded twice: once to count its bytes, which checks Config.MaxMessage
// before anything is sent and tells the receiver the size up front, then
// straight into the staging ring piece by piece, so a large []byte field
// is copied once. Generated and protobuf codecs encode into a buffer
// first. A message that fails after pieces of it left is aborted at the
// receiver.
func (n *Node) sendLarge(wait bool, rank int, kind byte, e *encoder) error {
	if !wait {
		// Replies from the receive loop are small; one that is not must
		// not wait for credit there.
		return fmt.Errorf("a message over one frame from the receive loop: %w", mailbox.ErrRingFull)
	}
	o := &chunkOut{n: n, rank: rank, kind: kind, id: n.chunkIDs.Add(1)}
	e.single = 0
	var err error
	if mt := (*registry.byType.Load())[reflect.TypeOf(e.msg)]; mt != nil && !mt.gen {
		e.counting = true
		if _, err := e.AppendBody(nil); err != nil {
			return err
		}
		o.total = e.flushed + len(e.buf)
		e.counting, e.out = false, o
		if _, err = e.AppendBody(nil); err == nil {
			err = o.finish(e, nil)
		}
	} else {
		var body []byte
		if body, err = e.AppendBody(nil); err != nil {
			return err
		}
		o.total = len(body)
		e.buf = nil // body is the buffer: it goes as the rest, unpooled
		err = o.finish(e, body)
	}
	if err != nil && o.sent > 0 {
		abort := binary.AppendUvarint([]byte{chunkAbort}, o.id)
		abort = append(abort, 0, 0) // total, off
		if aerr := n.mb.TrySend(rank, kindChunk, abort); aerr != nil {
			n.logs.warn(n.system, "abort of a message sent in part not sent", "rank", rank, "err", aerr)
		}
	}
	return err
}

// partial is a message being received in pieces: decoded as they come
// (dec), or put together in buf and decoded whole.
type partial struct {
	kind       mailbox.Kind
	total, got int
	// in is what the message's first piece said (target, sender, type),
	// or nil when its prelude did not fit in it: the whole body then
	// goes to buf and through recvMessage.
	in *incoming
	// base is where buf starts in the message: the payload's offset
	// with in, else 0.
	base   int
	buf    []byte
	dec    *streamDec
	failed bool // dropped and reported: the rest of its pieces are skipped
}

// reassembly is the receive loop's state of chunked messages, per sender;
// only the receive goroutine touches it.
type reassembly struct {
	bySender []map[uint64]*partial
	bytes    []int // bytes of the messages in flight, per sender
	// partials counts the messages in flight, for other goroutines
	// (tests) to read.
	partials atomic.Int64
}

// recvChunk takes a piece of a message. The first piece's prelude says
// where the message goes; a type msgpack decodes by reflection or custom
// methods is decoded as the pieces come, its byte fields copied once from
// the ring into the decoded value, and other types are put together and
// decoded whole. A piece that does not fit what came before (a length
// over MaxMessage, a gap, more bytes than declared, too many bytes in
// flight for one sender) drops that message and reports it; the pair
// goes on.
func (n *Node) recvChunk(from int, body []byte) {
	r := reader{b: body}
	kind := r.byte()
	id := r.uvarint()
	total := r.uvarint()
	off := r.uvarint()
	if r.err != nil || (kind != kindUser && kind != kindSystem && kind != chunkAbort) {
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
	if kind == chunkAbort {
		if p != nil {
			n.endPartial(from, id, p)
		}
		return
	}
	report := func(why string) {
		n.dropIncoming(from, &wireMsg{}, nil, nil, fmt.Errorf("chunked message %d from rank %d: %s: %w", id, from, why, ErrUndecodable))
	}
	if p == nil {
		switch {
		case off != 0:
			report(fmt.Sprintf("first piece at byte %d", off))
			return
		case total > uint64(n.cfg.MaxMessage):
			report(fmt.Sprintf("%d bytes over MaxMessage %d", total, n.cfg.MaxMessage))
			return
		case re.bytes[from]+n.heldBytes(int(total)) > maxHeldPerSender*n.cfg.MaxMessage:
			report("too many bytes held for this sender")
			return
		case uint64(len(data)) > total:
			report(fmt.Sprintf("a first piece of %d bytes", len(data)))
			return
		}
		var held bool
		if p, held = n.firstPiece(from, mailbox.Kind(kind), int(total), data); held {
			return // the piece comes again after a Resume
		}
		m[id] = p
		re.bytes[from] += n.heldBytes(p.total)
		re.partials.Add(1)
	} else if !p.failed {
		// The last piece comes again after the pair was held for the whole
		// message (Config.MaxInbound, prelude not in the first piece).
		again := p.in == nil && p.got == p.total && off+uint64(len(data)) == uint64(p.got)
		if !again {
			if off != uint64(p.got) || uint64(len(data)) > uint64(p.total-p.got) {
				// The pieces are not in step: what follows cannot be
				// told from a new message's, so the state goes now.
				n.failPartial(from, p, fmt.Errorf("chunked message %d from rank %d: piece at byte %d of %d bytes, %d expected: %w",
					id, from, off, len(data), p.got, ErrUndecodable))
				n.endPartial(from, id, p)
				return
			} else {
				n.addPiece(from, p, data)
			}
		}
	}
	if off+uint64(len(data)) < uint64(p.total) {
		return
	}
	if !p.failed {
		if n.lastPiece(from, p) {
			return // held: kept for the last piece's next coming
		}
	}
	n.endPartial(from, id, p)
}

// firstPiece starts a message of total bytes with its first piece: it
// reads the prelude, admits the message (Config.MaxInbound: held reports
// the pair held, and nothing is kept) and starts its decoding.
func (n *Node) firstPiece(from int, kind mailbox.Kind, total int, data []byte) (p *partial, held bool) {
	p = &partial{kind: kind, total: total}
	w, err := parseMessage(data)
	if err != nil { // a prelude longer than the piece: put together first
		p.buf = make([]byte, total)
		p.got = copy(p.buf, data)
		return p, false
	}
	in, held := n.accept(from, kind, &w, int64(total))
	if held {
		return nil, true
	}
	in.own()
	p.in, p.base = &in, len(data)-len(w.payload)
	p.got = p.base
	if w.flags&fProto == 0 {
		mt := n.lastType.get(w.typeName)
		if mt == nil {
			n.failPartial(from, p, fmt.Errorf("%q: %w on the receiving rank", w.typeName, ErrUnregistered))
			return p, false
		}
		if !mt.gen {
			p.dec = newStreamDec(mt, w.flags&fValue != 0, total-p.base)
		}
	}
	if p.dec == nil {
		p.buf = make([]byte, total-p.base)
	}
	n.addPiece(from, p, w.payload)
	return p, false
}

// addPiece takes the next bytes of p.
func (n *Node) addPiece(from int, p *partial, data []byte) {
	p.got += len(data)
	if p.dec == nil {
		copy(p.buf[p.got-len(data)-p.base:], data)
		return
	}
	if err := p.dec.feed(data, p.got == p.total); err != nil {
		n.failPartial(from, p, fmt.Errorf("%s: %v: %w", p.in.w.typeName, err, ErrUndecodable))
	}
}

// lastPiece decodes (unless that was done piece by piece) and delivers a
// message whose every byte came. It reports true when it held the pair
// instead (the prelude came whole only now).
func (n *Node) lastPiece(from int, p *partial) (held bool) {
	if p.in == nil {
		return n.recvMessage(from, p.kind, p.buf)
	}
	if p.dec != nil {
		n.finish(p.in, p.dec.msg, nil)
		return false
	}
	w := p.in.w
	w.payload = p.buf
	msg, err := decodePayload(&w, n.dec, &n.rd, &n.lastType)
	n.finish(p.in, msg, err)
	return false
}

// failPartial drops p's message and reports err; its later pieces are
// skipped.
func (n *Node) failPartial(from int, p *partial, err error) {
	p.failed = true
	p.buf = nil
	if p.dec != nil {
		p.dec.stop()
		p.dec = nil
	}
	if p.in != nil {
		n.finish(p.in, nil, err)
		return
	}
	n.dropIncoming(from, &wireMsg{}, nil, nil, err)
}

// endPartial forgets message id of rank from.
func (n *Node) endPartial(from int, id uint64, p *partial) {
	if p.dec != nil {
		p.dec.stop()
	}
	delete(n.chunks.bySender[from], id)
	n.chunks.bytes[from] -= n.heldBytes(p.total)
	n.chunks.partials.Add(-1)
}

// maxHeldPerSender bounds the partly received messages of one sender, in
// MaxMessage units: a sender's goroutines each chunk one message at a time.
const maxHeldPerSender = 4

// heldBytes is what a partly received message of total bytes counts
// against maxHeldPerSender: at least a frame (mailbox.Config.MaxFrame), so
// that the bound also caps how many a sender keeps open. A message in
// pieces costs the receiver its state and, decoded as it comes, a
// coroutine's stack, whatever its size. A sender chunks only messages
// over a frame, which this charges their size; a forged total of a few
// bytes would otherwise open millions.
func (n *Node) heldBytes(total int) int { return max(total, n.mb.Config().MaxFrame) }

// dropChunks drops every partial message, once the receive loop ended.
func (n *Node) dropChunks() {
	for r := range n.chunks.bySender {
		n.forgetChunks(r)
	}
}

// forgetChunks drops the partial messages of a rank that left.
func (n *Node) forgetChunks(from int) {
	re := &n.chunks
	if re.bySender == nil || re.bySender[from] == nil {
		return
	}
	for _, p := range re.bySender[from] {
		if p.dec != nil {
			p.dec.stop()
		}
		re.partials.Add(-1)
	}
	re.bySender[from] = nil
	re.bytes[from] = 0
}
