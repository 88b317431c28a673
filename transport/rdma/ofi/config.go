//go:build ofi && cgo && linux

package ofi

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Environment variables Open reads (every rank of a job should see the
// same values; rdmarun passes its environment on).
const (
	// EnvProvider names the libfabric provider: tcp, sockets, verbs, efa, or
	// any name fi_info -l lists. Default: the first fi_getinfo offers for
	// FI_EP_RDM with RMA (fi_getinfo sorts by preference), skipping the
	// intra-node and datagram ones (shm, sm2, udp, net, ofi_rxd).
	EnvProvider = "RDMACTOR_OFI_PROVIDER"
	// EnvSignals picks the signal strategy: auto (default), cqdata or
	// counter. See the package doc.
	EnvSignals = "RDMACTOR_OFI_SIGNALS"
	// EnvIface picks the libfabric domain, for tcp and sockets the network
	// interface (eth0, lo, veth0...). Default: fi_getinfo's first.
	EnvIface = "RDMACTOR_OFI_IFACE"
	// EnvProgress is manual (default: the provider's progress goroutine
	// drives the provider) or auto (the provider's own threads do).
	EnvProgress = "RDMACTOR_OFI_PROGRESS"
	// EnvPostTimeout bounds how long one post retries -FI_EAGAIN and how
	// long a mode query waits (a Go duration; default 10s). Past it the QP
	// fails.
	EnvPostTimeout = "RDMACTOR_OFI_POST_TIMEOUT"
	// EnvSpin is how long the progress goroutine keeps polling after its
	// last activity before it naps, or blocks on the CQ's wait object with
	// EnvWait=fd (a Go duration; default 20µs). Raise it where each rank has a core to
	// itself.
	EnvSpin = "RDMACTOR_OFI_SPIN"
	// EnvIdleMax is the longest nap of an idle progress goroutine where the
	// CQ has no wait object (a Go duration; default 4ms): the worst added
	// latency of the first message, after a quiet period of 64 ms or more,
	// to a rank that does not wait for it (naps are a sixteenth of the
	// quiet time so far, from 10µs up to this; a waiter naps at most its
	// idle strategy's MaxSleep). Each wake-up costs CPU, so the longest
	// nap bounds an idle rank's: 4 ms is at most 250 wake-ups a second.
	EnvIdleMax = "RDMACTOR_OFI_IDLE_MAX"
	// EnvWait is how an idle rank waits for its completion queue: fd
	// (default) opens the CQ with a wait object (FI_WAIT_FD, else
	// FI_WAIT_UNSPEC), and waits block on it, woken by the kernel when a
	// write arrives: an idle rank costs well under 1 % of a core
	// (examples/pingpong -only idle). poll opens it without one
	// (FI_WAIT_NONE) and waiters nap between polls once idle (several % of
	// a core per idle rank), for ranks that own a core and spin: on
	// tcp;ofi_rxm (libfabric 1.17) a wait object moves the provider to an
	// epoll wait set that slows every fi_cq_read (scripts/bench_ofi.sh
	// runs with poll). sockets never gets one (its reads would block).
	EnvWait = "RDMACTOR_OFI_WAIT"
	// EnvDebug, if set to 1, logs fabric selection and target-side signal
	// errors to stderr.
	EnvDebug = "RDMACTOR_OFI_DEBUG"
	// EnvMRBasic, if set to 1, asks fi_getinfo for the pre-1.5 FI_MR_BASIC
	// registration mode (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY |
	// FI_MR_ALLOCATED), which tcp and sockets honour: a way to test the
	// paths real NICs need (virtual addresses, provider keys) without one.
	EnvMRBasic = "RDMACTOR_OFI_MR_BASIC"
)

// strategy is how signals reach the target's signal words.
type strategy uint8

const (
	// cqdata: fi_writedata; the target's progress goroutine applies the
	// add carried in the remote CQ data (FI_REMOTE_CQ_DATA).
	cqdata strategy = iota + 1
	// counter: one signal endpoint per signal whose counter counts remote
	// writes (FI_RMA_EVENT); a write to it ticks the signal by one.
	counter
)

func (s strategy) String() string {
	switch s {
	case cqdata:
		return "cqdata"
	case counter:
		return "counter"
	}
	return "none"
}

// config is what Open takes from the environment.
type config struct {
	provider    string // libfabric provider name; "" for the default
	signals     strategy
	autoSignals bool
	iface       string
	manual      bool
	postTimeout time.Duration
	idleMax     time.Duration
	spin        time.Duration
	waitFD      bool // EnvWait=fd: a CQ wait object, fi_cq_sread when idle
	debug       bool
	mrBasic     bool
}

func configFromEnv() (config, error) {
	c := config{provider: os.Getenv(EnvProvider), iface: os.Getenv(EnvIface), manual: true,
		postTimeout: 10 * time.Second, idleMax: 4 * time.Millisecond, spin: 20 * time.Microsecond, debug: os.Getenv(EnvDebug) == "1", mrBasic: os.Getenv(EnvMRBasic) == "1"}
	switch v := strings.ToLower(os.Getenv(EnvSignals)); v {
	case "", "auto":
		c.autoSignals = true
	case "cqdata":
		c.signals = cqdata
	case "counter":
		c.signals = counter
	default:
		return c, fmt.Errorf("%s=%q: want auto, cqdata or counter", EnvSignals, v)
	}
	auto, err := envChoice(EnvProgress, "manual", "auto")
	if err != nil {
		return c, err
	}
	c.manual = !auto
	poll, err := envChoice(EnvWait, "fd", "poll")
	if err != nil {
		return c, err
	}
	c.waitFD = !poll
	for _, d := range []struct {
		env string
		dst *time.Duration
	}{{EnvPostTimeout, &c.postTimeout}, {EnvIdleMax, &c.idleMax}, {EnvSpin, &c.spin}} {
		if v := os.Getenv(d.env); v != "" {
			t, err := time.ParseDuration(v)
			if err != nil || t < 0 || t == 0 && d.env != EnvSpin {
				return c, fmt.Errorf("%s=%q: want a positive Go duration", d.env, v)
			}
			*d.dst = t
		}
	}
	return c, nil
}

// skipDefault lists providers the default choice passes over: they work
// within one host only or over datagrams, not what a job across hosts
// expects. They can still be named with EnvProvider.
var skipDefault = []string{"shm", "sm2", "udp", "net", "ofi_rxd"}

func skipped(prov string) bool {
	for _, part := range strings.Split(prov, ";") {
		for _, s := range skipDefault {
			if part == s {
				return true
			}
		}
	}
	return false
}

// mrModes is what the provider does for each FI_MR_* bit the domain
// requires (fi_mr(3), fi_domain(3) "MR Mode").
type mrModes struct {
	local    bool // FI_MR_LOCAL: pass fi_mr_desc with every local buffer (always done)
	virtAddr bool // FI_MR_VIRT_ADDR: target addresses are virtual addresses, not offsets
	provKey  bool // FI_MR_PROV_KEY: the provider picks keys (read with fi_mr_key)
	endpoint bool // FI_MR_ENDPOINT: bind each region to the endpoint, then enable it
	rmaEvent bool // FI_MR_RMA_EVENT: register with FI_RMA_EVENT, then enable
}

// supportedMRMode is the mr_mode hint: every bit this provider handles.
// FI_MR_ALLOCATED is always true of our regions (mmap'd before
// registration); FI_MR_RAW (keys over 8 bytes) and FI_MR_HMEM are not offered.
var supportedMRMode = fiMRLocal | fiMRVirtAddr | fiMRAllocated | fiMRProvKey | fiMREndpoint | fiMRRMAEvent

func mrModesOf(bits uint64) mrModes {
	if bits&fiMRBasic != 0 { // FI_MR_BASIC (API < 1.5): these three
		bits |= fiMRVirtAddr | fiMRProvKey | fiMRAllocated
	}
	return mrModes{
		local:    bits&fiMRLocal != 0,
		virtAddr: bits&fiMRVirtAddr != 0,
		provKey:  bits&fiMRProvKey != 0,
		endpoint: bits&fiMREndpoint != 0,
		rmaEvent: bits&fiMRRMAEvent != 0,
	}
}

// targetAddr is the address an initiator names for byte off of a region
// whose owner registered it at base: the virtual address under
// FI_MR_VIRT_ADDR, else the offset (fi_mr(3), "FI_MR_VIRT_ADDR").
func (m mrModes) targetAddr(base uint64, off int) uint64 {
	if m.virtAddr {
		return base + uint64(off)
	}
	return uint64(off)
}

func (m mrModes) String() string {
	var b []string
	for _, f := range []struct {
		on   bool
		name string
	}{{m.local, "FI_MR_LOCAL"}, {m.virtAddr, "FI_MR_VIRT_ADDR"}, {m.provKey, "FI_MR_PROV_KEY"}, {m.endpoint, "FI_MR_ENDPOINT"}, {m.rmaEvent, "FI_MR_RMA_EVENT"}} {
		if f.on {
			b = append(b, f.name)
		}
	}
	if len(b) == 0 {
		return "none"
	}
	return strings.Join(b, "|")
}

// quirks are provider behaviours found by testing (libfabric 1.17).
type quirks struct {
	// cqDataNeedsCompletion: the target sees a write's remote CQ data only
	// if the write was posted with FI_COMPLETION and not injected (sockets:
	// otherwise the data lands and the target's CQ gets nothing).
	cqDataNeedsCompletion bool
	// noInject: never post with FI_INJECT. ofi_rxm 1.17 (tcp;ofi_rxm,
	// verbs;ofi_rxm) crashes in fi_cq_read when an injected write fails
	// (its error entry has no op_context, which rxm_handle_comp_error
	// dereferences), as happens to writes in flight to a killed peer.
	noInject bool
	// spinOnly: never block in fi_cq_sread (sockets: its sread naps about
	// 100 µs between progress passes, slower than polling).
	spinOnly bool
	// progressAtPost: drive progress once after each post (Provider.push).
	// sockets queues a write in its tx ring and sends it only when
	// progressed, where tcp sends it inside fi_writemsg as far as the
	// socket takes it; without the push a write posted just before its
	// caller turned to other work (a signal, then a bootstrap barrier)
	// waited for the progress goroutine, up to pollerQuietMax (docs/ofi.md).
	progressAtPost bool
}

func quirksOf(prov string) quirks {
	q := quirks{}
	for _, part := range strings.Split(prov, ";") {
		switch part {
		case "sockets":
			q.cqDataNeedsCompletion = true
			q.spinOnly = true
			q.progressAtPost = true
		case "ofi_rxm":
			q.noInject = true
		}
	}
	return q
}

// maxPutSize caps one WQE (the endpoint's SQ accounting is per WQE, and a
// single write of more than 1 GiB gains nothing).
const maxPutSize = 1 << 30

// capsOf computes the provider's rdma.Capabilities from the chosen fabric.
func capsOf(it *info, s strategy, scMax int) rdma.Capabilities {
	c := rdma.Capabilities{MaxPutSize: maxPutSize, Get: it.caps&fiRead != 0}
	if it.maxMsgSize > 0 && it.maxMsgSize < maxPutSize {
		c.MaxPutSize = int(it.maxMsgSize)
	}
	switch s {
	case cqdata:
		// Strong: the target applies a signal only after its write's data
		// is placed, and writes of one endpoint to one peer are placed in
		// order (FI_ORDER_RMA_WAW), so every earlier put's data is too.
		c.StrongSignals = it.txOrder&fiOrderRMAWAW != 0
		c.SignalAdd = true
		c.VASignals = true
		c.MaxSignals = 1 << 16
	case counter:
		// Weak: a signal endpoint's counter ticks when the write to it is
		// placed; writes to other endpoints of the peer are not ordered
		// with it. One write ticks by one: no SignalAdd.
		c.MaxSignals = scMax
	}
	return c
}

// envChoice reads a two-valued variable: false for unset or def, true for
// alt, an error naming both for anything else (case is ignored).
func envChoice(name, def, alt string) (bool, error) {
	switch v := strings.ToLower(os.Getenv(name)); v {
	case "", def:
		return false, nil
	case alt:
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want %s or %s", name, v, def, alt)
	}
}
