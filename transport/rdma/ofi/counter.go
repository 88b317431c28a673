//go:build ofi && cgo && linux

package ofi

import (
	"fmt"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// The counter strategy (the sc_endpoints of the aws-ofi-nccl EFA-GDA
// backend): the target opens one signal endpoint per signal, each with a
// counter bound for FI_REMOTE_WRITE (FI_RMA_EVENT, fi_cntr(3)); an
// initiator that wants to tick signal j writes through the target's signal
// endpoint j, data and signal in one write. The target's progress goroutine reads the counters
// and adds each one's growth to signal word j. Since the counter ticks once
// per write, SignalAdd is rejected (rdma.ErrNotSupported; gin's
// Capabilities.SignalAdd is false), as are VA signals (no endpoint per
// window word). Writes to different endpoints of a peer are not ordered
// with each other, so signals are weak (Capabilities.StrongSignals false):
// a signal implies the data of its own put only.

// openSignalEndpoints opens n signal endpoints for the signals region r
// and returns their names for its descriptor.
func (p *Provider) openSignalEndpoints(r *Region, n int) ([][]byte, error) {
	scs := make([]scEndpoint, 0, n)
	names := make([][]byte, 0, n)
	for range n {
		s, err := p.f.openSC()
		if err != nil {
			for i := range scs {
				scs[i].close()
			}
			return nil, err
		}
		scs = append(scs, s)
		names = append(names, s.name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sc = scs
	p.cntrs = newCntrSet(scs)
	p.lastCnt = make([]uint64, n)
	p.lastErr = make([]uint64, n)
	p.sigReg.Store(r) // publishes cntrs and lastCnt to the progress goroutine
	return names, nil
}

// planCounter validates w's signal for the counter strategy and routes the
// write to the peer's signal endpoint.
func (q *qp) planCounter(w *rdma.WQE, ps *peerState, pl *plan) error {
	s := &w.Signal
	sig, err := q.remoteRegion(s.Region, "signal")
	if err != nil {
		return err
	}
	switch s.Mode {
	case rdma.SignalInc:
	case rdma.SignalAdd:
		return &rdma.UnsupportedError{Provider: Name, Feature: fmt.Sprintf("SignalAdd(%d) with counter signals (a remote-write counter ticks once per write: use SignalInc, or %s=cqdata)", s.Value, EnvSignals)}
	case rdma.SignalVA:
		return &rdma.UnsupportedError{Provider: Name, Feature: fmt.Sprintf("VA signals with counter signals (use %s=cqdata)", EnvSignals)}
	default:
		return fmt.Errorf("signal mode %d: %w", s.Mode, rdma.ErrNotSupported)
	}
	if !sig.signals {
		return &rdma.UnsupportedError{Provider: Name, Feature: fmt.Sprintf("a signal in rank %d's region %d: counter signals live only in its signals region", q.peer, sig.id)}
	}
	j := s.Off / 8
	scs := ps.scAddrs.Load()
	if scs == nil || j >= len(*scs) {
		return fmt.Errorf("signal %d of rank %d: it has %d signal endpoints: %w", j, q.peer, len(deref(scs)), rdma.ErrOutOfBounds)
	}
	pl.dest = (*scs)[j]
	return nil
}

func deref(s *[]uint64) []uint64 {
	if s == nil {
		return nil
	}
	return *s
}

// pollCounters adds each signal endpoint counter's growth to its signal
// word (progress goroutine). gin's ResetSignal stores 0 in the word; only
// growth is added, so resets need no coordination with the counters.
func (p *Provider) pollCounters() int {
	r := p.sigReg.Load()
	if r == nil {
		return 0
	}
	vals, errs := p.cntrs.poll()
	got := 0
	for j, v := range vals {
		if d := v - p.lastCnt[j]; d != 0 {
			if r.pins.Pin() {
				r.word(8 * j).Add(d)
				if r.onSignal != nil {
					r.onSignal()
				}
				r.pins.Unpin()
			}
			p.lastCnt[j] = v
			p.stats.SignalsApplied.Add(d)
			got++
		}
		if e := errs[j]; e != p.lastErr[j] {
			p.signalError(fmt.Errorf("signal endpoint %d: %d remote write errors (fi_cntr_readerr)", j, e-p.lastErr[j]))
			p.lastErr[j] = e
		}
	}
	return got
}
