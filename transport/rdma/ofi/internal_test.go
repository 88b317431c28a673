//go:build ofi && cgo && linux

package ofi

import (
	"errors"
	"math"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// TestImmRoundTrip checks the immediate-data encoding (imm.go) against a
// model: whatever a message holds, the target decodes the same message,
// in one word when it fits the inline layout and in an EXT run otherwise.
func TestImmRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		m      sigMsg
		sender int
		words  int
	}{
		{"inc inline", sigMsg{op: opInc, region: 2, word: 5, value: 1}, 3, 1},
		{"add inline max", sigMsg{op: opAdd, region: 1<<8 - 1, word: 1<<20 - 1, value: 1<<17 - 1}, 1<<16 - 1, 1},
		{"va inline max", sigMsg{op: opVA, region: 1<<13 - 1, word: 1<<24 - 1, value: 1<<24 - 1}, 0, 1},
		{"add value 2^17", sigMsg{op: opAdd, region: 2, word: 5, value: 1 << 17}, 9, 3},
		{"inc sender past inline", sigMsg{op: opInc, region: 2, word: 5, value: 1}, 1 << 16, 3},
		{"va inline", sigMsg{op: opVA, region: 7, word: 100, value: 42}, 1, 1},
		{"add big value", sigMsg{op: opAdd, region: 2, word: 5, value: math.MaxUint64}, 9, 4},
		{"add value 2^24", sigMsg{op: opAdd, region: 2, word: 5, value: 1 << 24}, 9, 3},
		{"va value 2^37", sigMsg{op: opVA, region: 2, word: 5, value: 1 << 37}, 9, 4},
		{"word past inline", sigMsg{op: opInc, region: 2, word: 1 << 24, value: 1}, 4, 3},
		{"region past inline", sigMsg{op: opInc, region: 1 << 13, word: 0, value: 1}, 4, 2},
		{"explicit mode word", sigMsg{op: opInc, region: 2, word: 3, modeWord: 77, explicit: true, value: 1}, 4, 4},
		{"query", sigMsg{op: opQuery, region: 2, modeWord: 9, explicit: true, value: maxPayload}, maxSender, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := encodeSig(nil, tc.m, tc.sender)
			require.NoError(t, err)
			require.Len(t, ws, tc.words)
			d := decoder{pending: make([]pendingSig, maxSender+1)}
			for i, w := range ws {
				m, sender, ok, err := d.decode(w)
				require.NoError(t, err)
				require.Equal(t, i == len(ws)-1, ok, "word %d of %d completes the message", i, len(ws))
				if ok {
					want := tc.m
					want.sender = tc.sender
					if tc.m.op == opVA && tc.words == 1 {
						want.sender = -1 // inline VA names no sender
					}
					require.Equal(t, want.sender, sender)
					if want.op == opVA {
						want.modeWord, want.explicit = 0, false
					}
					require.Equal(t, want, m)
				}
			}
		})
	}
}

// TestImmInterleaved: EXT runs of different senders may interleave at the
// target (only one sender's words are ordered); each completes on its own.
func TestImmInterleaved(t *testing.T) {
	a := sigMsg{op: opAdd, region: 3, word: 1, value: 1 << 40}
	b := sigMsg{op: opVA, region: 9000, word: 2, value: 5}
	a.sender, b.sender = 1, 2 // as decoded
	wa, err := encodeSig(nil, a, 1)
	require.NoError(t, err)
	wb, err := encodeSig(nil, b, 2)
	require.NoError(t, err)
	d := decoder{pending: make([]pendingSig, 4)}
	var got []sigMsg
	for i := range max(len(wa), len(wb)) {
		for _, ws := range [][]uint64{wa, wb} {
			if i < len(ws) {
				m, _, ok, err := d.decode(ws[i])
				require.NoError(t, err)
				if ok {
					got = append(got, m)
				}
			}
		}
	}
	require.ElementsMatch(t, []sigMsg{a, b}, got)
}

func TestImmErrors(t *testing.T) {
	_, err := encodeSig(nil, sigMsg{op: opInc, region: 0, value: 1}, 0)
	require.ErrorIs(t, err, errUnencodable, "region 0")
	_, err = encodeSig(nil, sigMsg{op: opInc, region: 1, word: maxPayload + 1, value: 1}, 0)
	require.ErrorIs(t, err, errUnencodable, "word past 2^37")
	_, err = encodeSig(nil, sigMsg{op: opInc, region: 1, value: 1}, maxSender+1)
	require.ErrorIs(t, err, errUnencodable, "sender past 2^21")
	d := decoder{pending: make([]pendingSig, 2)}
	for _, w := range []uint64{0, 6 << kindShift, 7 << kindShift,
		uint64(kindExt)<<kindShift | 5<<(subBits+payloadBits),                       // sender 5 of 2
		uint64(kindCommit)<<kindShift | 1<<(subBits+payloadBits) | 7<<payloadBits} { // op 7
		_, _, ok, err := d.decode(w)
		require.ErrorIs(t, err, errBadImm, "word %#x", w)
		require.False(t, ok)
	}
}

func TestDescriptorRoundTrip(t *testing.T) {
	d := descriptor{rank: 3, strat: counter, signals: true, id: 9, size: 4096, base: 0x7f0000001000, key: 77,
		ctrlBase: 0x7f0000002000, ctrlKey: 78, name: []byte("0123456789abcdef"), scNames: [][]byte{[]byte("a1"), []byte("b22")}}
	got, err := decodeDescriptor(d.encode())
	require.NoError(t, err)
	require.Equal(t, d, got)
	b := d.encode()
	for n := range len(b) { // every truncation is an error, never a panic
		_, err := decodeDescriptor(b[:n])
		require.ErrorIs(t, err, errBadDescriptor, "%d bytes", n)
	}
	for i := range descFixed { // so is every flipped header byte that matters
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		if _, err := decodeDescriptor(c); err == nil && i < 16 && i != 8 && i != 9 && i != 10 && i != 11 {
			t.Errorf("flipping byte %d was accepted", i)
		}
	}
}

// TestMRModes: what each mr_mode bit the domain requires makes the
// provider do (fi_mr(3)); tcp and sockets require none on loopback, real
// NICs do (FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_PROV_KEY).
func TestMRModes(t *testing.T) {
	m := mrModesOf(fiMRLocal | fiMRVirtAddr | fiMRProvKey | fiMREndpoint | fiMRRMAEvent)
	require.Equal(t, mrModes{local: true, virtAddr: true, provKey: true, endpoint: true, rmaEvent: true}, m)
	require.Equal(t, uint64(0x1000+24), m.targetAddr(0x1000, 24), "FI_MR_VIRT_ADDR: the virtual address")
	require.Equal(t, uint64(24), mrModes{}.targetAddr(0x1000, 24), "without it: the offset")
	require.Equal(t, "none", mrModes{}.String())
	require.Contains(t, m.String(), "FI_MR_PROV_KEY")
	require.NotZero(t, supportedMRMode&fiMRAllocated, "regions are always allocated before registration")
	require.Zero(t, supportedMRMode&(fiMRRaw|fiMRHMEM), "raw keys and device memory are not offered")
}

func TestUnusable(t *testing.T) {
	ok := info{cqDataSize: 8, caps: fiRMAEvent, epCount: 128, cntrCount: 128, mrKeySize: 8}
	require.Empty(t, unusable(&ok, cqdata))
	require.Empty(t, unusable(&ok, counter))
	small := ok
	small.cqDataSize = 4
	require.Contains(t, unusable(&small, cqdata), "cq_data_size 4")
	noEvent := ok
	noEvent.caps = 0
	require.Contains(t, unusable(&noEvent, counter), "FI_RMA_EVENT")
	ep := ok
	ep.mrMode = fiMREndpoint
	require.Contains(t, unusable(&ep, counter), "FI_MR_ENDPOINT")
	require.Empty(t, unusable(&ep, cqdata))
	raw := ok
	raw.mrMode = fiMRRaw
	require.NotEmpty(t, unusable(&raw, cqdata))
}

func TestCaps(t *testing.T) {
	it := info{txOrder: fiOrderRMAWAW, maxMsgSize: math.MaxUint64}
	c := capsOf(&it, cqdata, 0)
	require.True(t, c.StrongSignals)
	require.True(t, c.SignalAdd)
	require.Equal(t, maxPutSize, c.MaxPutSize)
	it.txOrder = 0
	require.False(t, capsOf(&it, cqdata, 0).StrongSignals, "no FI_ORDER_RMA_WAW: weak")
	c = capsOf(&it, counter, 60)
	require.False(t, c.StrongSignals)
	require.False(t, c.SignalAdd)
	require.Equal(t, 60, c.MaxSignals)
	it.maxMsgSize = 4096
	require.Equal(t, 4096, capsOf(&it, cqdata, 0).MaxPutSize)
}

// TestFabricError: libfabric codes become typed errors that name the
// code, carry fi_strerror's text, and match what they mean.
func TestFabricError(t *testing.T) {
	e := newFabricError("fi_writemsg", -codeAgain)
	require.Contains(t, e.Error(), "fi_writemsg")
	require.Contains(t, e.Error(), "-FI_EAGAIN")
	require.ErrorIs(t, e, syscall.EAGAIN)
	require.ErrorIs(t, newFabricError("fi_getinfo", -codeNoData), rdma.ErrNotSupported)
	require.ErrorIs(t, newFabricError("fi_mr_reg", -codeNoSys), rdma.ErrNotSupported)
	require.False(t, errors.Is(e, rdma.ErrNotSupported))
	c := &FabricError{Op: "completion", Code: int(syscall.ECONNRESET), ProvErr: 104, Msg: "Connection reset by peer"}
	require.Contains(t, c.Error(), "-FI_ECONNRESET")
	require.Contains(t, c.Error(), "Connection reset by peer")
	require.ErrorIs(t, c, syscall.ECONNRESET)
	require.Equal(t, "FI_ETRUNC", codeName(265))
	require.Equal(t, "FI_E#9999", codeName(9999))
}

// TestConfigChoices: the two-valued variables take either value in any
// case, and anything else is an error naming the variable and both values.
func TestConfigChoices(t *testing.T) {
	t.Setenv(EnvProgress, "AUTO")
	t.Setenv(EnvWait, "fd")
	c, err := configFromEnv()
	require.NoError(t, err)
	require.False(t, c.manual)
	require.True(t, c.waitFD)

	t.Setenv(EnvProgress, "")
	t.Setenv(EnvWait, "poll")
	c, err = configFromEnv()
	require.NoError(t, err)
	require.True(t, c.manual)
	require.False(t, c.waitFD)

	t.Setenv(EnvWait, "sometimes")
	_, err = configFromEnv()
	require.EqualError(t, err, EnvWait+`="sometimes": want fd or poll`)
	t.Setenv(EnvWait, "")
	c, err = configFromEnv()
	require.NoError(t, err)
	require.True(t, c.waitFD, "a wait object is the default")
	t.Setenv(EnvProgress, "both")
	_, err = configFromEnv()
	require.EqualError(t, err, EnvProgress+`="both": want manual or auto`)
}

// TestSlowReads checks when PollWait takes slow CQ reads for data moving
// (slowReads): a stream's pattern of a slow read every few reads counts
// from its second slow read on; slow reads further apart than streamReads
// (a nap's first read, the connection manager's) never count; and the
// waiter reads on at once while a slow read awaits its confirmation.
func TestSlowReads(t *testing.T) {
	type step struct{ slow, moving, confirming bool }
	const s, f = true, false
	cases := []struct {
		name  string
		steps []step
	}{
		{"idle", []step{{f, f, f}, {f, f, f}, {f, f, f}}},
		{"two in a row", []step{{s, f, s}, {s, s, s}}},
		{"stream", []step{{s, f, s}, {f, f, s}, {f, f, s}, {f, f, s}, {s, s, s}, {f, f, s}, {s, s, s}}},
		{"apart", append(append([]step{{s, f, s}}, slices.Repeat([]step{{f, f, s}}, streamReads-1)...),
			step{f, f, f}, step{s, f, s})},
		{"at the window's edge", append(append([]step{{s, f, s}}, slices.Repeat([]step{{f, f, s}}, streamReads-1)...),
			step{s, s, s})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r slowReads
			for i, st := range c.steps {
				moving, confirming := r.read(st.slow)
				require.Equal(t, st.moving, moving, "read %d: moving", i)
				require.Equal(t, st.confirming, confirming, "read %d: confirming", i)
			}
		})
	}
}
