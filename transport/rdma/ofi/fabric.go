//go:build ofi && cgo && linux

package ofi

// This file is the only one that speaks C: the libfabric objects the
// provider uses, each behind a small Go function. Most fi_* calls are static
// inline functions in the libfabric headers (they jump through the object's
// ops table), so the preamble wraps each in a plain C function with the
// pointer casts done once. Sources: fi_getinfo(3), fi_domain(3),
// fi_endpoint(3), fi_av(3), fi_cq(3), fi_cntr(3), fi_mr(3), fi_rma(3),
// libfabric 1.17.
//
// Memory that libfabric keeps a pointer to (registered buffers, operation
// contexts, CQ entry buffers) is C or mmap'd memory, never Go memory: cgo's
// pointer rules forbid C retaining Go pointers, and the contexts outlive the
// calls that pass them.

/*
#cgo LDFLAGS: -lfabric
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

// rdx_ctx is the context of one libfabric operation: fi_context2 first (the
// provider's scratch space under FI_CONTEXT/FI_CONTEXT2), then what the
// progress loop needs to route the completion.
typedef struct rdx_ctx {
	struct fi_context2 fi;
	uint64_t kind;  // ctxKind*
	uint64_t owner; // qp id, or internal op id
	uint64_t seq;   // op sequence number within the qp
} rdx_ctx;

static uint32_t rdx_version(void) { return FI_VERSION(1, 17); }

static struct fi_info *rdx_hints(const char *prov, const char *domain, uint64_t caps,
		uint64_t mode, uint64_t mr_mode, uint64_t order, int manual) {
	struct fi_info *h = fi_allocinfo();
	if (!h) return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->mode = mode;
	h->domain_attr->mr_mode = (int)mr_mode;
	h->domain_attr->threading = FI_THREAD_SAFE;
	if (manual) h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->tx_attr->msg_order = order;
	h->rx_attr->msg_order = order;
	if (prov && prov[0]) h->fabric_attr->prov_name = strdup(prov);
	if (domain && domain[0]) h->domain_attr->name = strdup(domain);
	return h;
}

static int rdx_getinfo(struct fi_info *hints, int basic, struct fi_info **out) {
	// basic: the pre-1.5 API with FI_MR_BASIC, which tcp and sockets honour
	// with virtual addresses and provider keys (a test of those paths).
	return fi_getinfo(basic ? FI_VERSION(1, 4) : rdx_version(), NULL, NULL, 0, hints, out);
}

static int rdx_fabric(struct fi_info *i, struct fid_fabric **f) { return fi_fabric(i->fabric_attr, f, NULL); }
static int rdx_domain(struct fid_fabric *f, struct fi_info *i, struct fid_domain **d) { return fi_domain(f, i, d, NULL); }
static int rdx_av_open(struct fid_domain *d, struct fid_av **av) {
	struct fi_av_attr a;
	memset(&a, 0, sizeof a);
	a.type = FI_AV_UNSPEC;
	return fi_av_open(d, &a, av, NULL);
}
static int rdx_cq_open(struct fid_domain *d, size_t size, int wait, struct fid_cq **cq) {
	struct fi_cq_attr a;
	memset(&a, 0, sizeof a);
	a.format = FI_CQ_FORMAT_DATA;
	a.size = size;
	a.wait_obj = wait == 2 ? FI_WAIT_FD : wait ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
	return fi_cq_open(d, &a, cq, NULL);
}
static int rdx_cntr_open(struct fid_domain *d, struct fid_cntr **c) {
	struct fi_cntr_attr a;
	memset(&a, 0, sizeof a);
	a.events = FI_CNTR_EVENTS_COMP;
	a.wait_obj = FI_WAIT_NONE;
	return fi_cntr_open(d, &a, c, NULL);
}
// rdx_ep_open opens an RDM endpoint bound to av and cq (selective
// completion: only operations posted with FI_COMPLETION report success) and,
// if cntr is set, counting remote writes into cntr; then enables it.
static int rdx_ep_open(struct fid_domain *d, struct fi_info *i, struct fid_av *av,
		struct fid_cq *cq, struct fid_cntr *cntr, struct fid_ep **ep) {
	int r = fi_endpoint(d, i, ep, NULL);
	if (r) return r;
	if ((r = fi_ep_bind(*ep, &av->fid, 0))) return r;
	if ((r = fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))) return r;
	if (cntr && (r = fi_ep_bind(*ep, &cntr->fid, FI_REMOTE_WRITE))) return r;
	return fi_enable(*ep);
}
static int rdx_getname(struct fid_ep *ep, void *buf, size_t *len) { return fi_getname(&ep->fid, buf, len); }
static int rdx_av_insert(struct fid_av *av, const void *name, fi_addr_t *out) {
	int n = fi_av_insert(av, name, 1, out, 0, NULL);
	return n == 1 ? 0 : (n < 0 ? n : -FI_EINVAL);
}
static int rdx_close(struct fid *f) { return fi_close(f); }
// The rdx_*_fid accessors map NULL to NULL so that closeFID can skip
// objects that were never opened.
static struct fid *rdx_ep_fid(struct fid_ep *p) { return p ? &p->fid : NULL; }
static struct fid *rdx_cq_fid(struct fid_cq *p) { return p ? &p->fid : NULL; }
static struct fid *rdx_av_fid(struct fid_av *p) { return p ? &p->fid : NULL; }
static struct fid *rdx_cntr_fid(struct fid_cntr *p) { return p ? &p->fid : NULL; }
static struct fid *rdx_mr_fid(struct fid_mr *p) { return p ? &p->fid : NULL; }
static struct fid *rdx_domain_fid(struct fid_domain *p) { return p ? &p->fid : NULL; }
static struct fid *rdx_fabric_fid(struct fid_fabric *p) { return p ? &p->fid : NULL; }

// rdx_mr_reg registers [buf, buf+len). With bind_ep (FI_MR_ENDPOINT) the
// region is bound to ep and enabled; with rma_event (FI_MR_RMA_EVENT) it is
// registered with FI_RMA_EVENT and enabled.
static int rdx_mr_reg(struct fid_domain *d, void *buf, size_t len, uint64_t access, uint64_t key,
		struct fid_ep *bind_ep, int rma_event, struct fid_mr **mr, uintptr_t *desc, uint64_t *out_key) {
	int r = fi_mr_reg(d, buf, len, access, 0, key, rma_event ? FI_RMA_EVENT : 0, mr, NULL);
	if (r) return r;
	if (bind_ep && (r = fi_mr_bind(*mr, &bind_ep->fid, 0))) return r;
	if ((bind_ep || rma_event) && (r = fi_mr_enable(*mr))) return r;
	*desc = (uintptr_t)fi_mr_desc(*mr);
	*out_key = fi_mr_key(*mr);
	return 0;
}

// rdx_msg is the one-entry fi_msg_rma of rdx_write and rdx_read.
static struct fi_msg_rma rdx_msg(struct iovec *iov, void **desc, fi_addr_t peer,
		struct fi_rma_iov *rma, uintptr_t ctx, uint64_t data) {
	struct fi_msg_rma m;
	m.msg_iov = iov;
	m.desc = desc;
	m.iov_count = 1;
	m.addr = peer;
	m.rma_iov = rma;
	m.rma_iov_count = 1;
	m.context = (void *)ctx;
	m.data = data;
	return m;
}

// rdx_write posts one RMA write (fi_writemsg): len bytes from buf to
// (addr, key) at dest, with data as remote CQ data when flags has
// FI_REMOTE_CQ_DATA. It and rdx_cq_read, the calls of every operation,
// take their pointers as integers: each points to C or mmap'd memory,
// never Go memory, and cgo's pointer check (cgocheck, ~0.1 µs a call)
// would prove that on every call.
static ssize_t rdx_write(uintptr_t epp, uintptr_t bufp, size_t len, uintptr_t descp, fi_addr_t dest,
		uint64_t addr, uint64_t key, uintptr_t ctx, uint64_t data, uint64_t flags) {
	void *desc = (void *)descp;
	struct iovec iov = { (void *)bufp, len };
	struct fi_rma_iov rma = { addr, len, key };
	struct fi_msg_rma m = rdx_msg(&iov, &desc, dest, &rma, ctx, data);
	return fi_writemsg((struct fid_ep *)epp, &m, flags);
}

// rdx_read posts one RMA read (fi_readmsg) of len bytes from (addr, key) at
// src into buf.
static ssize_t rdx_read(uintptr_t epp, uintptr_t bufp, size_t len, uintptr_t descp, fi_addr_t src,
		uint64_t addr, uint64_t key, uintptr_t ctx, uint64_t flags) {
	void *desc = (void *)descp;
	struct iovec iov = { (void *)bufp, len };
	struct fi_rma_iov rma = { addr, len, key };
	struct fi_msg_rma m = rdx_msg(&iov, &desc, src, &rma, ctx, 0);
	return fi_readmsg((struct fid_ep *)epp, &m, flags);
}

static ssize_t rdx_cq_read(uintptr_t cq, uintptr_t e, size_t n) {
	return fi_cq_read((struct fid_cq *)cq, (struct fi_cq_data_entry *)e, n);
}
static ssize_t rdx_cq_sread(struct fid_cq *cq, struct fi_cq_data_entry *e, size_t n, int timeout_ms) {
	return fi_cq_sread(cq, e, n, NULL, timeout_ms);
}
static int rdx_cq_signal(struct fid_cq *cq) { return fi_cq_signal(cq); }

// rdx_cq_readerr reads one error entry into e and its provider message into
// msg (NUL-terminated, at most len bytes).
static ssize_t rdx_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *e, char *msg, size_t len) {
	memset(e, 0, sizeof *e);
	ssize_t r = fi_cq_readerr(cq, e, 0);
	if (r < 0) return r;
	const char *s = fi_cq_strerror(cq, e->prov_errno, e->err_data, NULL, 0);
	if (!s) s = "";
	strncpy(msg, s, len - 1);
	msg[len - 1] = 0;
	return r;
}

// rdx_cntr_poll reads n counters into vals and their error counts into
// errs (fi_cntr_read drives progress on manual-progress providers).
static void rdx_cntr_poll(struct fid_cntr **c, int n, uint64_t *vals, uint64_t *errs) {
	for (int i = 0; i < n; i++) {
		vals[i] = fi_cntr_read(c[i]);
		errs[i] = fi_cntr_readerr(c[i]);
	}
}

static const char *rdx_strerror(int code) { return fi_strerror(code); }
static char *rdx_info_str(struct fi_info *i) { return fi_tostr(i, FI_TYPE_INFO); }
*/
import "C"

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// Context kinds (rdx_ctx.kind).
const (
	ctxOp       = 1 // a WQE's operation: owner = qp id, seq = op sequence number
	ctxInternal = 2 // a provider-internal operation (mode query read, connect)
	ctxStaged   = 3 // a write reported complete at post: owner = qp id, seq = staging slot + 1 (0: none)
)

// Libfabric constants the pure-Go files use, from rdma/fabric.h (1.17).
const (
	fiRMA             = uint64(C.FI_RMA)
	fiRead            = uint64(C.FI_READ)
	fiWrite           = uint64(C.FI_WRITE)
	fiRemoteRead      = uint64(C.FI_REMOTE_READ)
	fiRemoteWrite     = uint64(C.FI_REMOTE_WRITE)
	fiRMAEvent        = uint64(C.FI_RMA_EVENT)
	fiRemoteCQData    = uint64(C.FI_REMOTE_CQ_DATA)
	fiMore            = uint64(C.FI_MORE)
	fiCompletion      = uint64(C.FI_COMPLETION)
	fiInject          = uint64(C.FI_INJECT)
	fiDeliveryComp    = uint64(C.FI_DELIVERY_COMPLETE)
	fiContext         = uint64(C.FI_CONTEXT)
	fiContext2        = uint64(C.FI_CONTEXT2)
	fiOrderRMAWAW     = uint64(C.FI_ORDER_RMA_WAW)
	fiOrderRMARAW     = uint64(C.FI_ORDER_RMA_RAW)
	fiMRLocal         = uint64(C.FI_MR_LOCAL)
	fiMRVirtAddr      = uint64(C.FI_MR_VIRT_ADDR)
	fiMRAllocated     = uint64(C.FI_MR_ALLOCATED)
	fiMRProvKey       = uint64(C.FI_MR_PROV_KEY)
	fiMREndpoint      = uint64(C.FI_MR_ENDPOINT)
	fiMRRMAEvent      = uint64(C.FI_MR_RMA_EVENT)
	fiMRRaw           = uint64(C.FI_MR_RAW)
	fiMRHMEM          = uint64(C.FI_MR_HMEM)
	fiMRBasic         = uint64(C.FI_MR_BASIC)
	fiProgressManual  = int(C.FI_PROGRESS_MANUAL)
	fiAddrUnspec      = uint64(C.FI_ADDR_UNSPEC)
	codeAgain         = int(C.FI_EAGAIN)
	codeAvail         = int(C.FI_EAVAIL)
	codeNoData        = int(C.FI_ENODATA)
	codeNoSys         = int(C.FI_ENOSYS)
	codeOpNotSupp     = int(C.FI_EOPNOTSUPP)
	codeCanceled      = int(C.FI_ECANCELED)
	cqEntryBatch      = 64
	errMsgLen         = 256
	contextsPerSlab   = 256
	maxEndpointName   = 256
	cntrPollMax       = 1024
	defaultCQEntries  = 4096
	fiFlagRemoteWrite = uint64(C.FI_REMOTE_WRITE)
)

// strerror is fi_strerror(code) for a positive libfabric error code.
func strerror(code int) string { return C.GoString(C.rdx_strerror(C.int(code))) }

// info is one fi_info of a fi_getinfo list, with the fields the provider
// reads copied out.
type info struct {
	c           *C.struct_fi_info // owned by the list head
	prov        string            // fabric_attr->prov_name, e.g. "tcp;ofi_rxm"
	fabric      string            // fabric_attr->name
	domain      string            // domain_attr->name (the interface for tcp/sockets)
	caps        uint64
	mode        uint64
	mrMode      uint64
	txOrder     uint64
	rxOrder     uint64
	cqDataSize  int
	injectSize  int
	maxMsgSize  uint64
	mrKeySize   int
	epCount     int
	cntrCount   int
	dataManual  bool
	maxTxSize   int
	description string
}

// infoList is a fi_getinfo result; free it with free.
type infoList struct {
	head  *C.struct_fi_info
	items []info
}

// getinfo calls fi_getinfo for FI_EP_RDM with the given hints; prov and
// domain may be "" (any). An empty result (-FI_ENODATA) is a *FabricError
// with that code.
func getinfo(prov, domain string, caps, mode, mrMode, order uint64, manual, basic bool) (*infoList, error) {
	var cprov, cdom *C.char
	if prov != "" {
		cprov = C.CString(prov)
		defer C.free(unsafe.Pointer(cprov))
	}
	if domain != "" {
		cdom = C.CString(domain)
		defer C.free(unsafe.Pointer(cdom))
	}
	m := C.int(0)
	if manual {
		m = 1
	}
	hints := C.rdx_hints(cprov, cdom, C.uint64_t(caps), C.uint64_t(mode), C.uint64_t(mrMode), C.uint64_t(order), m)
	if hints == nil {
		return nil, newFabricError("fi_allocinfo", -int(C.FI_ENOMEM))
	}
	defer C.fi_freeinfo(hints)
	var head *C.struct_fi_info
	b := C.int(0)
	if basic {
		b = 1
	}
	if r := C.rdx_getinfo(hints, b, &head); r != 0 {
		return nil, newFabricError("fi_getinfo", int(r))
	}
	l := &infoList{head: head}
	for i := head; i != nil; i = i.next {
		it := info{
			c:          i,
			prov:       C.GoString(i.fabric_attr.prov_name),
			fabric:     C.GoString(i.fabric_attr.name),
			domain:     C.GoString(i.domain_attr.name),
			caps:       uint64(i.caps),
			mode:       uint64(i.mode),
			mrMode:     uint64(i.domain_attr.mr_mode),
			txOrder:    uint64(i.tx_attr.msg_order),
			rxOrder:    uint64(i.rx_attr.msg_order),
			cqDataSize: int(i.domain_attr.cq_data_size),
			injectSize: int(i.tx_attr.inject_size),
			maxMsgSize: uint64(i.ep_attr.max_msg_size),
			mrKeySize:  int(i.domain_attr.mr_key_size),
			epCount:    int(i.domain_attr.ep_cnt),
			cntrCount:  int(i.domain_attr.cntr_cnt),
			dataManual: int(i.domain_attr.data_progress) == fiProgressManual,
			maxTxSize:  int(i.tx_attr.size),
		}
		l.items = append(l.items, it)
	}
	return l, nil
}

// describe returns fi_tostr of the info (for error messages and -v logs).
func (i *info) describe() string { return C.GoString(C.rdx_info_str(i.c)) }

func (l *infoList) free() {
	if l != nil && l.head != nil {
		C.fi_freeinfo(l.head)
		l.head = nil
	}
}

// dupInfo copies one fi_info out of a list so the list can be freed.
func dupInfo(i *info) *C.struct_fi_info { return C.fi_dupinfo(i.c) }

// fabricObjs are the libfabric objects of one provider: fabric, domain,
// address vector, one completion queue and the main endpoint.
type fabricObjs struct {
	info *C.struct_fi_info
	fab  *C.struct_fid_fabric
	dom  *C.struct_fid_domain
	av   *C.struct_fid_av
	cq   *C.struct_fid_cq
	ep   *C.struct_fid_ep

	waitable bool      // the CQ has a wait object: fi_cq_sread blocks until a completion
	waiter   *cqWaiter // the wait object is an fd that Go's netpoller waits on; or nil

	// progress loop buffers (C memory, used under Provider.pollMu)
	entries *C.struct_fi_cq_data_entry
	errEnt  *C.struct_fi_cq_err_entry
	errMsg  *C.char
}

// open builds the objects for info (which it takes ownership of). With
// wait, it asks for a CQ wait object (FI_WAIT_UNSPEC), and falls back to
// none when the provider has no such thing.
func (f *fabricObjs) open(i *C.struct_fi_info, cqSize int, wait bool) error {
	f.info = i
	if r := C.rdx_fabric(i, &f.fab); r != 0 {
		return newFabricError("fi_fabric", int(r))
	}
	if r := C.rdx_domain(f.fab, i, &f.dom); r != 0 {
		return newFabricError("fi_domain", int(r))
	}
	if r := C.rdx_av_open(f.dom, &f.av); r != 0 {
		return newFabricError("fi_av_open", int(r))
	}
	if wait {
		// FI_WAIT_FD first: its fd lets waits block in Go's netpoller
		// (cqWaiter) rather than in a cgo call.
		if C.rdx_cq_open(f.dom, C.size_t(cqSize), 2, &f.cq) == 0 {
			f.waitable = true
			f.waiter = openCQWaiter(f.cq)
		} else {
			f.waitable = C.rdx_cq_open(f.dom, C.size_t(cqSize), 1, &f.cq) == 0
		}
	}
	if !f.waitable {
		if r := C.rdx_cq_open(f.dom, C.size_t(cqSize), 0, &f.cq); r != 0 {
			return newFabricError("fi_cq_open", int(r))
		}
	}
	if r := C.rdx_ep_open(f.dom, i, f.av, f.cq, nil, &f.ep); r != 0 {
		return newFabricError("fi_endpoint", int(r))
	}
	f.entries = (*C.struct_fi_cq_data_entry)(C.calloc(cqEntryBatch, C.size_t(unsafe.Sizeof(C.struct_fi_cq_data_entry{}))))
	f.errEnt = (*C.struct_fi_cq_err_entry)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_fi_cq_err_entry{}))))
	f.errMsg = (*C.char)(C.calloc(errMsgLen, 1))
	return nil
}

// close closes every object that was opened, endpoints before the CQ, AV,
// domain and fabric (fi_close order rules, fi_domain(3)).
func (f *fabricObjs) close() error {
	var first error
	closeFID(&first, "endpoint", C.rdx_ep_fid(f.ep))
	if f.waiter != nil {
		f.waiter.close()
		f.waiter = nil
	}
	closeFID(&first, "cq", C.rdx_cq_fid(f.cq))
	closeFID(&first, "av", C.rdx_av_fid(f.av))
	closeFID(&first, "domain", C.rdx_domain_fid(f.dom))
	closeFID(&first, "fabric", C.rdx_fabric_fid(f.fab))
	f.ep, f.cq, f.av, f.dom, f.fab = nil, nil, nil, nil, nil
	if f.info != nil {
		C.fi_freeinfo(f.info)
		f.info = nil
	}
	C.free(unsafe.Pointer(f.entries))
	C.free(unsafe.Pointer(f.errEnt))
	C.free(unsafe.Pointer(f.errMsg))
	f.entries, f.errEnt, f.errMsg = nil, nil, nil
	return first
}

// epName returns the endpoint's address (fi_getname).
func epName(ep *C.struct_fid_ep) ([]byte, error) {
	buf := C.malloc(maxEndpointName)
	defer C.free(buf)
	n := C.size_t(maxEndpointName)
	if r := C.rdx_getname(ep, buf, &n); r != 0 {
		return nil, newFabricError("fi_getname", int(r))
	}
	return C.GoBytes(buf, C.int(n)), nil
}

// avInsert inserts one endpoint address and returns its fi_addr_t.
func (f *fabricObjs) avInsert(name []byte) (uint64, error) {
	if len(name) == 0 || len(name) > maxEndpointName {
		return 0, fmt.Errorf("endpoint name of %d bytes", len(name))
	}
	buf := C.CBytes(name)
	defer C.free(buf)
	var a C.fi_addr_t
	if r := C.rdx_av_insert(f.av, buf, &a); r != 0 {
		return 0, newFabricError("fi_av_insert", int(r))
	}
	return uint64(a), nil
}

// mr is one registration.
type mr struct {
	c *C.struct_fid_mr
	// desc is fi_mr_desc, passed with every local buffer (FI_MR_LOCAL). It is
	// an opaque provider value (tcp returns small integers such as 0x2), so it
	// lives in a uintptr: in an unsafe.Pointer the garbage collector would
	// take it for a bad pointer ("invalid pointer found on stack").
	desc uintptr
	key  uint64 // fi_mr_key: the requested key, or the provider's (FI_MR_PROV_KEY)
}

// regMR registers mem (mmap'd memory) with access flags; bindEP and
// rmaEvent follow the domain's FI_MR_ENDPOINT and FI_MR_RMA_EVENT bits.
func (f *fabricObjs) regMR(mem []byte, access, key uint64, bindEP, rmaEvent bool) (mr, error) {
	var ep *C.struct_fid_ep
	if bindEP {
		ep = f.ep
	}
	ev := C.int(0)
	if rmaEvent {
		ev = 1
	}
	var m mr
	var desc C.uintptr_t
	var k C.uint64_t
	r := C.rdx_mr_reg(f.dom, unsafe.Pointer(unsafe.SliceData(mem)), C.size_t(len(mem)), C.uint64_t(access), C.uint64_t(key), ep, ev, &m.c, &desc, &k)
	if r != 0 {
		if m.c != nil {
			C.rdx_close(C.rdx_mr_fid(m.c))
		}
		return mr{}, newFabricError("fi_mr_reg", int(r))
	}
	m.desc, m.key = uintptr(desc), uint64(k)
	return m, nil
}

func (m *mr) close() error {
	var err error
	closeFID(&err, "mr", C.rdx_mr_fid(m.c))
	m.c = nil
	return err
}

// closeFID closes fid (fi_close(3)) unless it is nil, and keeps the first
// failure in *first as a FabricError naming what was closed.
func closeFID(first *error, what string, fid *C.struct_fid) {
	if fid == nil {
		return
	}
	if r := C.rdx_close(fid); r != 0 && *first == nil {
		*first = newFabricError("fi_close "+what, int(r))
	}
}

// ctx is a C-allocated operation context.
type ctx C.rdx_ctx

// ctxSlab allocates n zeroed contexts in C memory.
func ctxSlab(n int) (unsafe.Pointer, []ctx) {
	p := C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.rdx_ctx{})))
	return p, unsafe.Slice((*ctx)(p), n)
}

func cfree(p unsafe.Pointer) { C.free(p) }

func (c *ctx) set(kind, owner, seq uint64) {
	c.kind, c.owner, c.seq = C.uint64_t(kind), C.uint64_t(owner), C.uint64_t(seq)
}

func (c *ctx) fields() (kind, owner, seq uint64) {
	return uint64(c.kind), uint64(c.owner), uint64(c.seq)
}

// The data path's calls into libfabric (write, read, pollCQ, cntrSet.poll)
// hold the calling goroutine on its OS thread for the call
// (runtime.LockOSThread, released on return).
//
// Why: a goroutine in a cgo call keeps its P only until sysmon retakes it
// (runtime/proc.go, retake; a 64 KiB fi_writemsg on tcp lasts ~16 µs,
// and a streaming producer's slice grows old between its yields). If
// another goroutine holds that P when the call returns and no P is idle,
// an unlocked goroutine is queued on the global run queue, its thread
// stops, and whichever thread finds it runs it next: the producer hops
// between the process's threads, and the kernel places each woken thread
// where it sees room, often the core of the peer rank's spinning poller.
// A locked goroutine waits for a P on its own thread instead, which
// stays on its core. The lock costs a few stores and an open-coded defer
// per call; it nests within the progress goroutine's own lock and a
// caller's. Post's yields (schedPost) keep a producer's slice from growing
// old; the lock still covers a call that outlasts a sysmon tick while no
// P is idle.

// write posts fi_writemsg on ep (nil: the main endpoint). It returns the raw
// return code: 0, -FI_EAGAIN or another negative code.
func (f *fabricObjs) write(buf unsafe.Pointer, n int, desc uintptr, dest, addr, key uint64, c *ctx, data, flags uint64) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return int(C.rdx_write(C.uintptr_t(uintptr(unsafe.Pointer(f.ep))), C.uintptr_t(uintptr(buf)), C.size_t(n), C.uintptr_t(desc),
		C.fi_addr_t(dest), C.uint64_t(addr), C.uint64_t(key), C.uintptr_t(uintptr(unsafe.Pointer(c))), C.uint64_t(data), C.uint64_t(flags)))
}

// read posts fi_readmsg on the main endpoint; return code as write.
func (f *fabricObjs) read(buf unsafe.Pointer, n int, desc uintptr, src, addr, key uint64, c *ctx, flags uint64) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return int(C.rdx_read(C.uintptr_t(uintptr(unsafe.Pointer(f.ep))), C.uintptr_t(uintptr(buf)), C.size_t(n), C.uintptr_t(desc),
		C.fi_addr_t(src), C.uint64_t(addr), C.uint64_t(key), C.uintptr_t(uintptr(unsafe.Pointer(c))), C.uint64_t(flags)))
}

// cqEntry is what the progress loop needs of one CQ entry.
type cqEntry struct {
	ctx   *ctx
	flags uint64
	data  uint64
	len   int
}

// pollCQ reads up to cqEntryBatch entries into out (which must have room)
// and returns how many; a negative return is a libfabric code (-FI_EAGAIN:
// nothing; -FI_EAVAIL: an error entry waits for readErr).
func (f *fabricObjs) pollCQ(out []cqEntry) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := int(C.rdx_cq_read(C.uintptr_t(uintptr(unsafe.Pointer(f.cq))), C.uintptr_t(uintptr(unsafe.Pointer(f.entries))), cqEntryBatch))
	return f.copyEntries(out, n)
}

// waitCQ blocks for up to timeoutMS for completions and reads them into
// out, like pollCQ: in Go's netpoller on the CQ's wait fd where there is
// one (after fi_trywait(3) says nothing is pending and quiet still holds),
// else in fi_cq_sread. signalCQ wakes it (fi_cq_signal).
func (f *fabricObjs) waitCQ(out []cqEntry, timeoutMS int, quiet func() bool) int {
	if f.waiter != nil {
		if f.waiter.tryWait(f.fab, f.cq) && quiet() {
			f.waiter.wait(time.Duration(timeoutMS) * time.Millisecond)
		}
		return f.pollCQ(out)
	}
	n := int(C.rdx_cq_sread(f.cq, f.entries, cqEntryBatch, C.int(timeoutMS)))
	return f.copyEntries(out, n)
}

// copyEntries converts the n entries a CQ read left in f.entries into out
// and returns n; a negative n (a libfabric code) is returned unchanged.
func (f *fabricObjs) copyEntries(out []cqEntry, n int) int {
	if n <= 0 {
		return n
	}
	es := unsafe.Slice(f.entries, n)
	for i := range es {
		out[i] = cqEntry{ctx: (*ctx)(es[i].op_context), flags: uint64(es[i].flags), data: uint64(es[i].data), len: int(es[i].len)}
	}
	return n
}

func (f *fabricObjs) signalCQ() { C.rdx_cq_signal(f.cq) }

// cqErr is one CQ error entry.
type cqErr struct {
	ctx     *ctx
	flags   uint64
	data    uint64
	code    int // positive FI_E* / errno
	provErr int
	msg     string // fi_cq_strerror
}

// readErr reads one error entry (after pollCQ returned -FI_EAVAIL).
func (f *fabricObjs) readErr() (cqErr, bool) {
	r := C.rdx_cq_readerr(f.cq, f.errEnt, f.errMsg, errMsgLen)
	if r < 0 {
		return cqErr{}, false
	}
	e := f.errEnt
	return cqErr{ctx: (*ctx)(e.op_context), flags: uint64(e.flags), data: uint64(e.data), code: int(e.err),
		provErr: int(e.prov_errno), msg: C.GoString(f.errMsg)}, true
}

// scEndpoint is a signal endpoint of the counter strategy: an endpoint whose
// counter counts the remote writes that reach it (the sc_endpoint of the
// aws-ofi-nccl EFA-GDA backend).
type scEndpoint struct {
	ep   *C.struct_fid_ep
	cntr *C.struct_fid_cntr
	name []byte
}

// openSC opens one signal endpoint with its remote-write counter.
func (f *fabricObjs) openSC() (scEndpoint, error) {
	var s scEndpoint
	if r := C.rdx_cntr_open(f.dom, &s.cntr); r != 0 {
		return s, newFabricError("fi_cntr_open", int(r))
	}
	if r := C.rdx_ep_open(f.dom, f.info, f.av, f.cq, s.cntr, &s.ep); r != 0 {
		err := newFabricError("fi_endpoint (signal endpoint)", int(r))
		s.close()
		return scEndpoint{}, err
	}
	name, err := epName(s.ep)
	if err != nil {
		s.close()
		return scEndpoint{}, err
	}
	s.name = name
	return s, nil
}

func (s *scEndpoint) close() error {
	var first error
	closeFID(&first, "signal endpoint", C.rdx_ep_fid(s.ep))
	closeFID(&first, "counter", C.rdx_cntr_fid(s.cntr))
	s.ep, s.cntr = nil, nil
	return first
}

// cntrSet is the counters the progress loop reads in one C call.
type cntrSet struct {
	arr  **C.struct_fid_cntr
	vals *C.uint64_t
	errs *C.uint64_t
	n    int
}

func newCntrSet(scs []scEndpoint) cntrSet {
	n := len(scs)
	if n == 0 {
		return cntrSet{}
	}
	s := cntrSet{n: n}
	s.arr = (**C.struct_fid_cntr)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(uintptr(0)))))
	s.vals = (*C.uint64_t)(C.calloc(C.size_t(n), 8))
	s.errs = (*C.uint64_t)(C.calloc(C.size_t(n), 8))
	arr := unsafe.Slice(s.arr, n)
	for i := range scs {
		arr[i] = scs[i].cntr
	}
	return s
}

// poll reads every counter; vals and errs alias C memory valid until the
// next poll.
func (s *cntrSet) poll() (vals, errs []uint64) {
	if s.n == 0 {
		return nil, nil
	}
	runtime.LockOSThread()
	C.rdx_cntr_poll(s.arr, C.int(s.n), s.vals, s.errs)
	runtime.UnlockOSThread()
	return unsafe.Slice((*uint64)(unsafe.Pointer(s.vals)), s.n), unsafe.Slice((*uint64)(unsafe.Pointer(s.errs)), s.n)
}

func (s *cntrSet) free() {
	C.free(unsafe.Pointer(s.arr))
	C.free(unsafe.Pointer(s.vals))
	C.free(unsafe.Pointer(s.errs))
	*s = cntrSet{}
}
