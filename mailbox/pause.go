package mailbox

import "sync/atomic"

// pauseState is the receive loop's record of held pairs (Hold, Resume).
type pauseState struct {
	// hold and holdFrom: Hold was called during the current Frame call.
	// held: pairs whose head frame waits for Resume. Loop only.
	hold     bool
	holdFrom int
	held     []bool
	// resumed holds Resume's requests by sender; pending counts the set
	// ones, so that the loop looks at them only when there are some.
	resumed []atomic.Bool
	pending atomic.Int64
}

func (p *pauseState) init(size int) {
	p.held = make([]bool, size)
	p.resumed = make([]atomic.Bool, size)
}

// Hold, called from Handler.Frame for the frame it was given (from is
// that frame's sender), leaves that frame in the ring, unconsumed, and
// holds the pair: the receive loop reads nothing more from rank from and
// returns it no credit for what it has not consumed, so that sender's
// Sends wait for credit once its ring is full (and return a
// *RingFullError after Config.SendTimeout). The frame is handed to Frame
// again, with the pair's later frames after it, once Resume(from) is
// called; Frame must then handle it as if it were new, so a Frame that
// holds must have had no lasting effect for it. Other pairs go on.
//
// Call it only from Frame, on the receive loop (its state is not locked);
// a Hold for another rank than the frame's sender does nothing.
func (m *Mailbox) Hold(from int) {
	m.pause.hold, m.pause.holdFrom = true, from
}

// Resume ends a Hold of the pair with rank from and wakes the receive
// loop, which hands the held frame to Handler.Frame again at its next
// poll. It may be called from any goroutine, before or after the Hold it
// answers (a Resume that finds the pair not held yet ends the Hold that
// follows it, which then costs one more call of Frame); a Resume of a
// pair that is not held and is not about to be is forgotten. A rank
// outside the job is ignored.
func (m *Mailbox) Resume(from int) {
	p := &m.pause
	if from < 0 || from >= len(p.resumed) {
		return
	}
	if !p.resumed[from].Swap(true) {
		p.pending.Add(1)
	}
	// End the loop's current wait; waitFrames looks at pending after it
	// made its context, so a Resume that cancelled an older one is seen.
	if c := m.waitCancel.Load(); c != nil {
		(*c)()
	}
}

// held reports whether the pair with s is held, taking a Resume for it
// first. The receive loop calls it before it polls s.
func (m *Mailbox) held(s int) bool {
	p := &m.pause
	if p.pending.Load() != 0 && p.resumed[s].Swap(false) {
		p.pending.Add(-1)
		p.held[s] = false
	}
	return p.held[s]
}

// tookHold reports whether the Frame call for a frame of s just made
// asked to hold it, and holds the pair if so.
func (m *Mailbox) tookHold(s int) bool {
	p := &m.pause
	if !p.hold {
		return false
	}
	p.hold = false
	if p.holdFrom != s {
		return false
	}
	p.held[s] = true
	m.rc.holds.Add(1)
	return true
}

// resumesPending reports whether a Resume waits for the loop to see it:
// the loop must then not block.
func (m *Mailbox) resumesPending() bool { return m.pause.pending.Load() != 0 }

// neverReady is added to a held pair's wait threshold: half the counter
// range ahead, which its frame signal does not reach in the rolling order
// of gin's waits, so the loop does not wake for a pair it will not read;
// Resume ends the wait instead.
const neverReady = 1 << 63

// waitLeast is the frame-signal value the loop waits for from s.
func (m *Mailbox) waitLeast(s int, q *inPair) uint64 {
	if m.pause.held[s] {
		return q.r.frames + 1 + neverReady
	}
	return q.r.frames + 1
}
