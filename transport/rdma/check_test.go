package rdma

import (
	"errors"
	"testing"
)

type fakeLocal struct{ mem []byte }

func (r fakeLocal) Bytes() []byte      { return r.mem }
func (r fakeLocal) Descriptor() []byte { return nil }
func (r fakeLocal) Close() error       { return nil }

type fakeRemote struct{ size int }

func (r fakeRemote) Peer() int    { return 1 }
func (r fakeRemote) Size() int    { return r.size }
func (r fakeRemote) Close() error { return nil }

type fakeQP struct{ posted int }

func (q *fakeQP) Peer() int              { return 1 }
func (q *fakeQP) Post(w []WQE) error     { q.posted += len(w); return nil }
func (q *fakeQP) Progress() (int, error) { return 0, nil }
func (q *fakeQP) Close() error           { return nil }

// CheckWQE accepts what a provider may execute and rejects the rest with
// the errors providers used to return.
func TestCheckWQE(t *testing.T) {
	local, remote := fakeLocal{make([]byte, 64)}, fakeRemote{128}
	put := func(lo, ro, n int) WQE {
		return WQE{Op: OpWrite, Local: local, LocalOff: lo, Remote: remote, RemoteOff: ro, Len: n}
	}
	sig := func(mode SignalMode, off, modeOff int) WQE {
		return WQE{Op: OpSignal, Signal: Signal{Mode: mode, Region: remote, Off: off, ModeOff: modeOff, Value: 1}}
	}
	for _, c := range []struct {
		name string
		w    WQE
		want error // nil: accepted
		any  bool  // any error
	}{
		{"nop", WQE{Op: OpNop}, nil, false},
		{"put", put(0, 64, 64), nil, false},
		{"read", WQE{Op: OpRead, Local: local, Remote: remote, Len: 8}, nil, false},
		{"signal", sig(SignalInc, 8, 16), nil, false},
		{"va signal", sig(SignalVA, 8, -1), nil, false},
		{"local past end", put(8, 0, 64), ErrOutOfBounds, false},
		{"remote past end", put(0, 100, 64), ErrOutOfBounds, false},
		{"negative len", put(0, 0, -1), ErrOutOfBounds, false},
		{"over max put", put(0, 0, 65), ErrOutOfBounds, false},
		{"over max put, in bounds", WQE{Op: OpRead, Local: fakeLocal{make([]byte, 128)}, Remote: remote, Len: 65}, ErrNotSupported, false},
		{"signal misaligned", sig(SignalInc, 4, -1), ErrOutOfBounds, false},
		{"signal past end", sig(SignalAdd, 128, -1), ErrOutOfBounds, false},
		{"mode word is the signal", sig(SignalAdd, 8, 8), ErrOutOfBounds, false},
		{"unknown mode", sig(9, 8, -1), ErrNotSupported, false},
		{"unknown opcode", WQE{Op: 77}, ErrNotSupported, false},
		{"closed local", WQE{Op: OpWrite, Local: fakeLocal{}, Remote: remote, Len: 0}, ErrClosed, false},
		{"no local", WQE{Op: OpWrite, Remote: remote}, nil, true},
		{"read with a signal", WQE{Op: OpRead, Local: local, Remote: remote, Signal: Signal{Mode: SignalInc, Region: remote}}, nil, true},
		{"signal without a mode", WQE{Op: OpSignal}, nil, true},
	} {
		err := CheckWQE(&c.w, 64)
		switch {
		case c.any && err == nil:
			t.Errorf("%s: accepted, want an error", c.name)
		case !c.any && c.want == nil && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// A checking QP posts what precedes a bad WQE and nothing from it on;
// Checked wraps only when checking is on.
func TestCheckedQP(t *testing.T) {
	inner := &fakeQP{}
	q := CheckQP(inner, 1<<20)
	err := q.Post([]WQE{{Op: OpNop}, {Op: OpNop}, {Op: 77}, {Op: OpNop}})
	var we *WQEError
	if !errors.As(err, &we) || we.Index != 2 || !errors.Is(err, ErrNotSupported) {
		t.Fatalf("post: %v, want a WQEError at index 2 wrapping ErrNotSupported", err)
	}
	if inner.posted != 2 {
		t.Fatalf("%d WQEs reached the provider, want the 2 before the bad one", inner.posted)
	}
	t.Setenv(EnvCheckWQEs, "1")
	if _, ok := Checked(inner, 1).(*checkedQP); !ok {
		t.Fatalf("Checked with %s=1 did not wrap", EnvCheckWQEs)
	}
	t.Setenv(EnvCheckWQEs, "")
	if _, ok := Checked(inner, 1).(*checkedQP); ok != checkBuild {
		t.Fatalf("Checked without %s wrapped: %v, want %v (rdmacheck build)", EnvCheckWQEs, ok, checkBuild)
	}
}
