package actor

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/rdmactor/rdmactor/internal/msgpackcheck"
)

// streamDec decodes a message that arrives in pieces as the pieces come:
// the msgpack decoder runs in a coroutine (iter.Pull) that the receive
// loop resumes with each piece, on its own goroutine's turn, and that
// suspends when it has read the piece. So the decoder reads the ring
// itself: a []byte field is copied once, from the ring into the value it
// decodes into, and the message is never held whole in a buffer of its
// own. msgpackcheck.Stream checks each piece before the decoder sees it,
// as msgpackcheck.Check does a whole payload.
type streamDec struct {
	chk *msgpackcheck.Stream
	// cur is the piece being read, a slice of the ring, valid only while
	// feed runs; nil otherwise.
	cur []byte
	// last is the byte ReadByte returned; back says UnreadByte gave it
	// back, canBack that it may.
	last          byte
	back, canBack bool
	// populated is the end address of the last field populate was asked
	// for (an address only: one past a buffer's end may be another's).
	populated uintptr

	yield func(struct{}) bool
	next  func() (struct{}, bool)
	stop  func()

	done bool // the decoder returned: msg, err hold its result
	msg  any
	err  error
}

// newStreamDec starts the decoding of a payload of size bytes of type mt
// (value: deliver T, not *T). Call stop if the message is given up.
func newStreamDec(mt *msgType, value bool, size int) *streamDec {
	s := &streamDec{chk: msgpackcheck.NewStream(size)}
	s.next, s.stop = iter.Pull(func(yield func(struct{}) bool) {
		s.yield = yield
		defer func() {
			// A type whose custom decoder panics on bad input is an
			// undecodable message, not a crash of the receive loop.
			if p := recover(); p != nil {
				s.msg, s.err = nil, fmt.Errorf("decoder panicked: %v", p)
			}
			s.done = true
		}()
		s.msg, s.err = mt.decode(msgpack.NewDecoder(s), value)
	})
	return s
}

// feed hands the decoder the next piece, b, and runs it until it has read
// b (it suspends for the next piece) or returns; last says b ends the
// payload. It returns the decoder's error, the check's, or one for bytes
// the decoder did not take.
func (s *streamDec) feed(b []byte, last bool) error {
	if err := s.chk.Feed(b); err != nil {
		return err
	}
	if last {
		if err := s.chk.End(); err != nil {
			return err
		}
	}
	if !s.done && len(b) > 0 {
		s.cur = b
		s.next()
		b, s.cur = s.cur, nil
	}
	switch {
	case s.done && s.err != nil:
		return s.err
	case len(b) > 0 || s.done && !last:
		return errors.New("bytes after the message")
	case last && !s.done:
		// The check saw a whole value, but the decoder wants more (a
		// custom decoder that reads past its value).
		s.stop()
		return errors.New("the decoder read past the message")
	}
	return nil
}

// populateMin is the least read into which streamDec faults the pages
// ahead of the copies (populate).
const populateMin = 1 << 20

// fill waits, suspended, for a piece with bytes; false: the message was
// given up.
func (s *streamDec) fill() bool {
	for len(s.cur) == 0 {
		if !s.yield(struct{}{}) {
			return false
		}
	}
	return true
}

// Read is the decoder's io.Reader: it copies from the piece in hand.
func (s *streamDec) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	s.canBack = false
	if s.back {
		s.back = false
		b[0] = s.last
		return 1, nil
	}
	if !s.fill() {
		return 0, io.ErrUnexpectedEOF
	}
	if len(b) >= populateMin && len(b) > len(s.cur) {
		// A large field whose rest is still to come: its pages are
		// faulted in meanwhile, once (io.ReadFull reads it in turns,
		// each ending where the field does).
		if end := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b)); end != s.populated {
			s.populated = end
			populate(b[len(s.cur):])
		}
	}
	k := copy(b, s.cur)
	s.cur = s.cur[k:]
	return k, nil
}

// ReadByte and UnreadByte make streamDec an io.ByteScanner, which msgpack
// reads without a bufio layer of its own.
func (s *streamDec) ReadByte() (byte, error) {
	if s.back {
		s.back, s.canBack = false, true
		return s.last, nil
	}
	if !s.fill() {
		return 0, io.ErrUnexpectedEOF
	}
	s.last, s.cur, s.canBack = s.cur[0], s.cur[1:], true
	return s.last, nil
}

// UnreadByte gives back the byte of the last ReadByte.
func (s *streamDec) UnreadByte() error {
	if !s.canBack {
		return errors.New("actor: UnreadByte not after ReadByte")
	}
	s.back, s.canBack = true, false
	return nil
}
