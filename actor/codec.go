package actor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/proto"

	"github.com/rdmactor/rdmactor/internal/msgpackcheck"
)

// Frame kinds of the actor layer on the mailbox.
const (
	kindUser   = 1 // a user message to a local actor
	kindSystem = 2 // Watch, Unwatch, Terminated, Stop to a local actor
	kindNotice = 3 // the receiver could not deliver a message this rank sent
	kindBye    = 4 // the sending rank's node is closing: it sends nothing after
)

// Body of a user or system frame (after the mailbox's 16-byte header):
//
//	flags   u8    fSender | fHeader | fValue | fProto
//	target  str   the target PID's Id (its Address is the receiving rank)
//	sender  pid   if fSender: str Address, str Id, uvarint RequestId
//	header  map   if fHeader: uvarint n, then n × (str key, str value)
//	type    str   registered name, or protobuf full name with fProto
//	payload       msgpack (protobuf with fProto) of the message, to the end
//
// str is a uvarint length and that many bytes. A notice body is: target
// pid, u8 flags (fSender), sender pid if fSender, type str, reason str.
const (
	fSender = 1 << iota // a sender PID follows the target
	fHeader             // message headers follow
	fValue              // deliver T, not *T
	fProto              // payload is protobuf, type is its full name
)

// encoder builds frame bodies: a pooled buffer that a msgpack encoder
// writes into, so a send allocates nothing of its own.
type encoder struct {
	buf   []byte
	mp    *msgpack.Encoder
	limit int // largest encoding allowed (Config.MaxMessage); 0: none

	// single, when > 0, is the largest body one frame holds: an encoding
	// that passes it stops with errLarge and is sent in pieces instead.
	single int
	// counting: payload bytes are counted in flushed, not kept (the
	// first pass of a message sent in pieces, which learns its size).
	counting bool
	// out, when set, takes the encoding in pieces as it grows (the
	// second pass); flushed counts the bytes it took.
	out     *chunkOut
	flushed int
	// werr is the first error a write returned: an encoder that goes on
	// after it (a custom one that drops errors) still fails.
	werr error

	// The message AppendBody encodes (set).
	target, sender *PID
	header         map[string]string
	msg            any
}

// set sets the message that AppendBody encodes.
func (e *encoder) set(target, sender *PID, header map[string]string, msg any) {
	e.target, e.sender, e.header, e.msg = target, sender, header, msg
}

// AppendBody encodes the message of set into dst, the mailbox's staging
// ring (mailbox.BodyAppender), or into e's own buffer when dst is nil.
// The msgpack encoder writes through e, so it lands in dst too.
func (e *encoder) AppendBody(dst []byte) ([]byte, error) {
	if dst == nil {
		err := e.message(e.target, e.sender, e.header, e.msg)
		return e.buf, err
	}
	own := e.buf
	e.buf = dst
	err := e.message(e.target, e.sender, e.header, e.msg)
	body := e.buf
	e.buf = own
	return body, err
}

// maxPooled bounds the buffers kept in the pool; bigger ones (after a
// large message) are dropped, as NATS returns buffers to pools by cap.
const maxPooled = 256 << 10

var encoders = sync.Pool{New: func() any {
	e := &encoder{buf: make([]byte, 0, 1024)}
	e.mp = msgpack.NewEncoder(e)
	return e
}}

func getEncoder() *encoder { return encoders.Get().(*encoder) }

func putEncoder(e *encoder) {
	if cap(e.buf) <= maxPooled {
		e.buf, e.limit, e.single, e.counting, e.out, e.flushed, e.werr = e.buf[:0], 0, 0, false, nil, 0, nil
		e.set(nil, nil, nil, nil)
		encoders.Put(e)
	}
}

// Write appends p (msgpack's io.Writer), unless that would pass the limit:
// the encoding then stops there, before the buffer grows.
func (e *encoder) Write(p []byte) (int, error) {
	if err := e.grow(len(p)); err != nil {
		return 0, err
	}
	switch {
	case e.counting:
		e.flushed += len(p)
	case e.out != nil && len(e.buf)+len(p) > pendMax:
		if err := e.out.write(e, p); err != nil {
			e.werr = err
			return 0, err
		}
	default:
		e.buf = append(e.buf, p...)
	}
	return len(p), nil
}

// WriteByte appends c (msgpack's io.ByteWriter, which spares it a wrapper).
func (e *encoder) WriteByte(c byte) error {
	if err := e.grow(1); err != nil {
		return err
	}
	if e.counting {
		e.flushed++
		return nil
	}
	if e.out != nil && len(e.buf) >= pendMax {
		if err := e.out.write(e, []byte{c}); err != nil {
			e.werr = err
			return err
		}
		return nil
	}
	e.buf = append(e.buf, c)
	return nil
}

// grow checks that n more bytes keep the encoding within the limit and,
// for one frame, within the frame.
func (e *encoder) grow(n int) error {
	total := e.flushed + len(e.buf) + n
	switch {
	case e.werr != nil:
	case e.limit > 0 && total > e.limit:
		e.werr = e.tooLarge(total)
	case e.single > 0 && total > e.single:
		e.werr = errLarge
	}
	return e.werr
}

// errLarge stops the encoding of a message that one frame cannot hold;
// it is then sent in pieces (chunk.go) and never reaches the caller.
var errLarge = errors.New("message larger than a frame")

// tooLarge is the error of an encoding that reached n bytes.
func (e *encoder) tooLarge(n int) error {
	return fmt.Errorf("at least %d bytes, limit %d: %w", n, e.limit, ErrMessageTooLarge)
}

func (e *encoder) str(s string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) pid(p *PID) {
	e.str(p.Address)
	e.str(p.Id)
	e.buf = binary.AppendUvarint(e.buf, uint64(p.RequestId))
}

// message encodes a user or system message body into e.buf.
func (e *encoder) message(target, sender *PID, header map[string]string, msg any) error {
	var flags byte
	var name string
	mt := (*registry.byType.Load())[reflect.TypeOf(msg)]
	var pm proto.Message
	switch {
	case mt != nil:
		name = mt.name
		if reflect.TypeOf(msg).Kind() != reflect.Pointer {
			flags |= fValue
		}
	default:
		var ok bool
		if pm, ok = msg.(proto.Message); !ok {
			return fmt.Errorf("%T: %w (actor.RegisterMessage)", msg, ErrUnregistered)
		}
		name = string(pm.ProtoReflect().Descriptor().FullName())
		flags |= fProto
	}
	if sender != nil {
		flags |= fSender
	}
	if len(header) > 0 {
		flags |= fHeader
	}
	e.buf = append(e.buf[:0], flags)
	e.flushed, e.werr = 0, nil
	e.str(target.Id)
	if sender != nil {
		e.pid(sender)
	}
	if len(header) > 0 {
		e.buf = binary.AppendUvarint(e.buf, uint64(len(header)))
		for k, v := range header {
			e.str(k)
			e.str(v)
		}
	}
	e.str(name)
	if pm != nil {
		size := len(e.buf) + proto.Size(pm)
		if e.limit > 0 && size > e.limit {
			return fmt.Errorf("encode %s: %w", name, e.tooLarge(size))
		}
		if e.single > 0 && size > e.single {
			return errLarge
		}
		var err error
		if e.buf, err = (proto.MarshalOptions{}).MarshalAppend(e.buf, pm); err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		return nil
	}
	var err error
	switch {
	case mt.gen:
		m := genMarshaler(msg)
		if sz, ok := m.(interface{ Msgsize() int }); ok {
			bound := len(e.buf) + sz.Msgsize()
			// Msgsize is an upper bound (tinylib/msgp): check the real
			// size, but after encoding only when the bound is far off.
			if e.limit > 0 && bound > 2*e.limit {
				return fmt.Errorf("encode %s: %w", name, e.tooLarge(bound))
			}
			if e.single > 0 && bound > e.single {
				return errLarge
			}
		}
		e.buf, err = m.MarshalMsg(e.buf)
		switch {
		case err != nil:
		case e.limit > 0 && len(e.buf) > e.limit:
			err = e.tooLarge(len(e.buf))
		case e.single > 0 && len(e.buf) > e.single:
			return errLarge
		}
	case mt.custom:
		err = customEncoder(msg).EncodeMsgpack(e.mp)
	default:
		err = e.mp.Encode(msg)
	}
	if err == nil {
		err = e.werr
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return nil
}

// genMarshaler returns msg (T or *T of a type with generated methods) as
// its marshaler; a T value whose methods have pointer receivers is copied
// to the heap, as customEncoder does.
func genMarshaler(msg any) appendMarshaler {
	if m, ok := msg.(appendMarshaler); ok {
		return m
	}
	p := reflect.New(reflect.TypeOf(msg))
	p.Elem().Set(reflect.ValueOf(msg))
	return p.Interface().(appendMarshaler)
}

// customEncoder returns msg (T or *T of a custom type) as its encoder. A T
// value is copied to the heap to take its address; send *T to avoid that.
func customEncoder(msg any) msgpack.CustomEncoder {
	if ce, ok := msg.(msgpack.CustomEncoder); ok {
		return ce
	}
	p := reflect.New(reflect.TypeOf(msg))
	p.Elem().Set(reflect.ValueOf(msg))
	return p.Interface().(msgpack.CustomEncoder)
}

// notice encodes a notice body into e.buf.
func (e *encoder) notice(target, sender *PID, typeName, reason string) {
	e.buf = e.buf[:0]
	e.pid(target)
	if sender != nil {
		e.buf = append(e.buf, fSender)
		e.pid(sender)
	} else {
		e.buf = append(e.buf, 0)
	}
	e.str(typeName)
	e.str(reason)
}

// reader parses a body without allocating: strings come back as slices
// of the body (valid while the frame is). The first malformed field sets
// err; later reads return zero values.
type reader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated body")

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errTruncated
	}
	r.b = nil
}

// wirePID is a PID as it lies in a body.
type wirePID struct {
	addr, id []byte
	req      uint32
}

func (r *reader) pid() wirePID {
	p := wirePID{addr: r.str(), id: r.str()}
	req := r.uvarint()
	if req > 1<<32-1 {
		r.fail()
	}
	p.req = uint32(req)
	return p
}

// wireMsg is a parsed user or system body.
type wireMsg struct {
	flags    byte
	target   []byte
	sender   wirePID
	header   map[string]string
	typeName []byte
	payload  []byte
}

// parseMessage parses a user or system body.
func parseMessage(b []byte) (wireMsg, error) {
	r := reader{b: b}
	var w wireMsg
	w.flags = r.byte()
	if w.flags&^(fSender|fHeader|fValue|fProto) != 0 {
		return w, fmt.Errorf("unknown flags %#02x", w.flags)
	}
	w.target = r.str()
	if w.flags&fSender != 0 {
		w.sender = r.pid()
	}
	if w.flags&fHeader != 0 {
		n := r.uvarint()
		if n > uint64(len(r.b)) { // each entry takes at least two bytes
			r.fail()
		}
		if r.err == nil {
			w.header = make(map[string]string, n)
			for range n {
				k, v := r.str(), r.str()
				w.header[string(k)] = string(v)
			}
		}
	}
	w.typeName = r.str()
	w.payload = r.b
	if r.err != nil {
		return w, r.err
	}
	if len(w.target) == 0 {
		return w, errors.New("empty target id")
	}
	return w, nil
}

// wireNotice is a parsed notice body.
type wireNotice struct {
	target, sender   wirePID
	hasSender        bool
	typeName, reason []byte
}

func parseNotice(b []byte) (wireNotice, error) {
	r := reader{b: b}
	var w wireNotice
	w.target = r.pid()
	if r.byte()&fSender != 0 {
		w.hasSender = true
		w.sender = r.pid()
	}
	w.typeName = r.str()
	w.reason = r.str()
	return w, r.err
}

// typeCache remembers the last type name the receive loop looked up: a
// stream of one type then costs a byte comparison, not a map lookup that
// hashes the name. Registered types are never removed, so a hit is valid.
type typeCache struct {
	name []byte
	mt   *msgType
}

func (c *typeCache) get(name []byte) *msgType {
	if c.mt != nil && bytes.Equal(c.name, name) {
		return c.mt
	}
	mt := typeByName(name)
	if mt != nil {
		c.name, c.mt = append(c.name[:0], name...), mt
	}
	return mt
}

// decodePayload decodes w's payload with dec reading from rd and types
// cached in last (the receive loop's own). A panic of the decoder (a type
// whose custom decoder panics on bad input) is an ErrUndecodable, not a
// crash.
func decodePayload(w *wireMsg, dec *msgpack.Decoder, rd *bytesReader, last *typeCache) (msg any, err error) {
	defer func() {
		if p := recover(); p != nil {
			msg, err = nil, fmt.Errorf("%s: decoder panicked: %v: %w", w.typeName, p, ErrUndecodable)
		}
	}()
	if w.flags&fProto != 0 {
		mt, ok := protoByName(w.typeName)
		if !ok {
			return nil, fmt.Errorf("protobuf message %q: %w on the receiving rank", w.typeName, ErrUnregistered)
		}
		m := mt.New().Interface()
		if err := proto.Unmarshal(w.payload, m); err != nil {
			return nil, fmt.Errorf("%s: %v: %w", w.typeName, err, ErrUndecodable)
		}
		return m, nil
	}
	mt := last.get(w.typeName)
	if mt == nil {
		return nil, fmt.Errorf("%q: %w on the receiving rank", w.typeName, ErrUnregistered)
	}
	if err := msgpackcheck.Check(w.payload); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", mt.name, err, ErrUndecodable)
	}
	if mt.gen {
		v, err := mt.unmarshal(w.payload, w.flags&fValue != 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %w", mt.name, err, ErrUndecodable)
		}
		return v, nil
	}
	rd.Reset(w.payload)
	dec.ResetReader(rd)
	v, err := mt.decode(dec, w.flags&fValue != 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", mt.name, err, ErrUndecodable)
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("%s: %d bytes after the message: %w", mt.name, rd.Len(), ErrUndecodable)
	}
	return v, nil
}

// bytesReader is what the receive loop's msgpack decoder reads from: a
// bytes.Reader is an io.ByteScanner, so msgpack reads it without a bufio
// layer of its own.
type bytesReader = bytes.Reader
