//go:build ofi && cgo && linux

package ofi

import (
	"errors"
	"fmt"
)

// Signals of the cqdata strategy travel as the 64-bit remote CQ data of
// fi_writedata (fi_rma(3): FI_REMOTE_CQ_DATA; domain cq_data_size >= 8).
// The target's progress loop decodes each word and applies the add to its
// own memory. Most signals fit one word (the inline kinds); the rest are a
// run of EXT words, each setting one field of the sender's pending message,
// ended by a COMMIT word. A run is only correct if the words of one sender
// reach the target's CQ in the order they were posted, which every
// provider this strategy is enabled on promises for writes of one
// endpoint to one peer (FI_ORDER_RMA_WAW; tcp;ofi_rxm and sockets deliver
// remote CQ data of one connection in order).
//
// Inline kinds, one word. INC and ADD carry the sender, so that a target
// whose mode word holds the other mode can report the drop back to it
// (query.go, reportMixed); VA has no mode and no sender:
//
//	 63  61 60    53 52           33 32          17 16              0
//	+------+--------+---------------+--------------+-----------------+
//	| INC/ | reg:8  | word:20       | sender:16    | value:17        |
//	| ADD  |        |               |              |                 |
//	+------+--------+---------------+--------------+-----------------+
//
//	 63  61 60        48 47                  24 23                   0
//	+------+------------+----------------------+----------------------+
//	| VA   | region:13  | word:24              | value:24             |
//	+------+------------+----------------------+----------------------+
//
// EXT and COMMIT:
//
//	 63  61 60                 40 39 37 36                            0
//	+------+---------------------+-----+-------------------------------+
//	| kind | sender:21           | sub | payload:37                    |
//	+------+---------------------+-----+-------------------------------+
//
// region is the target's region id (from its descriptor), word the signal
// word's index (byte offset / 8), value the amount to add. INC and ADD
// check and claim the signal's mode word, which for inline words is the
// "paired" one, where gin keeps it (rdma.PairedModeOff: a signals region
// is Signals value words, padded to a cache line, then Signals mode
// words). A mode word anywhere else travels in an EXT word. VA has no mode
// word.
//
// EXT subs: 0 region, 1 word, 2 mode word (explicit), 3 value >> 37.
// COMMIT subs: 0 INC, 1 ADD, 2 VA (payload: value & (1<<37 - 1)), 3 QUERY
// (payload: a token; the target stores token<<8 | mode-word value in its
// control region's result word of the sender, which the sender reads back:
// see query.go).
const (
	kindInvalid = 0
	kindInc     = 1
	kindAdd     = 2
	kindVA      = 3
	kindExt     = 4
	kindCommit  = 5

	kindShift        = 61
	inlineRegionBits = 13 // VA
	inlineWordBits   = 24
	inlineValueBits  = 24
	modeRegionBits   = 8 // INC and ADD
	modeWordBits     = 20
	modeSenderBits   = 16
	modeValueBits    = 17
	senderBits       = 21
	subBits          = 3
	payloadBits      = 37

	extRegion   = 0
	extWord     = 1
	extModeWord = 2
	extValueHi  = 3

	maxSender  = 1<<senderBits - 1
	maxPayload = 1<<payloadBits - 1
)

// sigOp is what a signal message does at the target.
type sigOp uint8

const (
	opInc   sigOp = iota // add value, claiming the mode word for SignalInc
	opAdd                // add value, claiming the mode word for SignalAdd
	opVA                 // add value, no mode word (VA signals)
	opQuery              // report the mode word (value is the token)
)

func (o sigOp) String() string {
	switch o {
	case opInc:
		return "inc"
	case opAdd:
		return "add"
	case opVA:
		return "va"
	case opQuery:
		return "query"
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// sigMsg is one decoded signal message.
type sigMsg struct {
	op       sigOp
	region   uint64 // target region id (>= 1)
	word     uint64 // signal word index
	modeWord uint64 // mode word index when explicit
	explicit bool   // modeWord given; else paired (rdma.PairedModeOff)
	value    uint64 // amount to add; the token for opQuery
	sender   int    // set by the decoder: the sender's rank, -1 if the word has none
}

// errUnencodable is wrapped when a signal's fields exceed what the
// encoding carries (regions or offsets past 2^37 words).
var errUnencodable = errors.New("signal does not fit the immediate-data encoding")

// encodeSig appends the CQ data words of m from sender to out and returns
// the slice. The caller leaves m.explicit false when the mode word is the
// paired one, which then travels implicitly.
func encodeSig(out []uint64, m sigMsg, sender int) ([]uint64, error) {
	if m.region == 0 || m.region > maxPayload || m.word > maxPayload || (m.explicit && m.modeWord > maxPayload) {
		return out, fmt.Errorf("region %d, word %d, mode word %d: %w", m.region, m.word, m.modeWord, errUnencodable)
	}
	if sender < 0 || sender > maxSender {
		return out, fmt.Errorf("sender rank %d: %w", sender, errUnencodable)
	}
	if w, ok := inlineWord(m, sender); ok {
		return append(out, w), nil
	}
	s := uint64(sender)
	ext := func(sub, payload uint64) uint64 {
		return uint64(kindExt)<<kindShift | s<<(subBits+payloadBits) | sub<<payloadBits | payload
	}
	out = append(out, ext(extRegion, m.region))
	if m.word != 0 {
		out = append(out, ext(extWord, m.word))
	}
	if m.explicit && m.op != opVA {
		out = append(out, ext(extModeWord, m.modeWord))
	}
	if hi := m.value >> payloadBits; hi != 0 && m.op != opQuery {
		out = append(out, ext(extValueHi, hi))
	}
	if m.op == opQuery && m.value > maxPayload {
		return out, fmt.Errorf("query token %#x: %w", m.value, errUnencodable)
	}
	return append(out, uint64(kindCommit)<<kindShift|s<<(subBits+payloadBits)|uint64(m.op)<<payloadBits|m.value&maxPayload), nil
}

// inlineWord is m's one CQ data word from sender where m is of an inline
// kind and its fields fit (encodeSig's common case, inlinable).
func inlineWord(m sigMsg, sender int) (uint64, bool) {
	if m.op == opVA {
		if m.region == 0 || m.region >= 1<<inlineRegionBits || m.word >= 1<<inlineWordBits || m.value >= 1<<inlineValueBits {
			return 0, false
		}
		return uint64(kindVA)<<kindShift | m.region<<(inlineWordBits+inlineValueBits) | m.word<<inlineValueBits | m.value, true
	}
	if m.op > opVA || m.explicit || m.region == 0 || m.region >= 1<<modeRegionBits || m.word >= 1<<modeWordBits ||
		m.value >= 1<<modeValueBits || uint(sender) >= 1<<modeSenderBits {
		return 0, false
	}
	// opInc, opAdd are kindInc, kindAdd less one
	return uint64(m.op+kindInc)<<kindShift | m.region<<(modeWordBits+modeSenderBits+modeValueBits) |
		m.word<<(modeSenderBits+modeValueBits) | uint64(sender)<<modeValueBits | m.value, true
}

// pendingSig is the target's state of one sender's EXT run.
type pendingSig struct {
	region, word, modeWord, valueHi uint64
	explicit                        bool
}

// decoder turns CQ data words into messages; it keeps one pending run per
// sender rank. Used by the progress goroutine only.
type decoder struct {
	pending []pendingSig // by sender rank
}

// isInline reports whether w is a word of an inline kind (decodeInline).
func isInline(w uint64) bool { k := w >> kindShift; return k >= kindInc && k <= kindVA }

// decodeInline is decode of a word of an inline kind (inlinable).
func decodeInline(w uint64) sigMsg {
	if w>>kindShift == kindVA {
		return sigMsg{
			op:     opVA,
			region: w >> (inlineWordBits + inlineValueBits) & (1<<inlineRegionBits - 1),
			word:   w >> inlineValueBits & (1<<inlineWordBits - 1),
			value:  w & (1<<inlineValueBits - 1),
			sender: -1,
		}
	}
	return sigMsg{
		op:     sigOp(w>>kindShift - kindInc), // opInc, opAdd
		region: w >> (modeWordBits + modeSenderBits + modeValueBits) & (1<<modeRegionBits - 1),
		word:   w >> (modeSenderBits + modeValueBits) & (1<<modeWordBits - 1),
		sender: int(w >> modeValueBits & (1<<modeSenderBits - 1)),
		value:  w & (1<<modeValueBits - 1),
	}
}

// errBadImm is wrapped by every decoding error.
var errBadImm = errors.New("malformed signal immediate data")

// decode consumes one word. It returns ok when a message is complete (the
// word was inline or a COMMIT), with its sender (-1 for inline VA).
func (d *decoder) decode(w uint64) (m sigMsg, sender int, ok bool, err error) {
	switch kind := w >> kindShift; kind {
	case kindInc, kindAdd, kindVA:
		m = decodeInline(w)
		return m, m.sender, true, nil
	case kindExt, kindCommit:
		sender = int(w >> (subBits + payloadBits) & maxSender)
		if sender >= len(d.pending) {
			return m, sender, false, fmt.Errorf("%w: sender rank %d of %d", errBadImm, sender, len(d.pending))
		}
		p := &d.pending[sender]
		sub, payload := w>>payloadBits&(1<<subBits-1), w&maxPayload
		if kind == kindExt {
			switch sub {
			case extRegion:
				p.region = payload
			case extWord:
				p.word = payload
			case extModeWord:
				p.modeWord, p.explicit = payload, true
			case extValueHi:
				p.valueHi = payload
			default:
				return m, sender, false, fmt.Errorf("%w: ext sub %d", errBadImm, sub)
			}
			return m, sender, false, nil
		}
		if sub > uint64(opQuery) {
			*p = pendingSig{}
			return m, sender, false, fmt.Errorf("%w: commit op %d", errBadImm, sub)
		}
		m = sigMsg{op: sigOp(sub), region: p.region, word: p.word, modeWord: p.modeWord, explicit: p.explicit,
			value: p.valueHi<<payloadBits | payload, sender: sender}
		*p = pendingSig{}
		return m, sender, true, nil
	default:
		return m, -1, false, fmt.Errorf("%w: kind %d (word %#x)", errBadImm, kind, w)
	}
}
