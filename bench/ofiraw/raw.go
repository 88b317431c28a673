//go:build ofi && cgo && linux

package main

// The raw-libfabric anchor: the same fabric (fi_getinfo hints as the ofi
// provider: FI_EP_RDM, RMA, FI_ORDER_RMA_WAW, FI_THREAD_SAFE, manual
// progress) and the same operations (fi_writedata with remote CQ data,
// polled from one thread), with no rdmactor layer: no gin, no endpoint
// SQ, no progress goroutine, no signal words. Everything timed runs in C.

/*
#cgo LDFLAGS: -lfabric
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

typedef struct raw {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	char *buf;
	size_t len;
	void *desc;
	fi_addr_t peer;
	uint64_t rkey, raddr;
	int virt;
	uint64_t inject; // use FI_INJECT for writes up to this size (0: never)
	long outstanding; // local completions not yet seen
	long remote;      // remote CQ data entries seen
	struct fi_context2 ctx;
	int sread; // block in fi_cq_sread instead of spinning on fi_cq_read
} raw;

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int raw_open(raw *r, const char *prov, const char *iface, size_t len, char *name, size_t *namelen) {
	struct fi_info *h = fi_allocinfo();
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->tx_attr->msg_order = h->rx_attr->msg_order = FI_ORDER_RMA_WAW | FI_ORDER_RMA_RAW;
	h->fabric_attr->prov_name = strdup(prov);
	if (iface && iface[0]) h->domain_attr->name = strdup(iface);
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &r->info);
	fi_freeinfo(h);
	if (ret) return ret;
	if ((ret = fi_fabric(r->info->fabric_attr, &r->fab, NULL))) return ret;
	if ((ret = fi_domain(r->fab, r->info, &r->dom, NULL))) return ret;
	struct fi_av_attr av = { .type = FI_AV_UNSPEC };
	if ((ret = fi_av_open(r->dom, &av, &r->av, NULL))) return ret;
	struct fi_cq_attr cq = { .format = FI_CQ_FORMAT_DATA, .size = 4096, .wait_obj = r->sread ? FI_WAIT_UNSPEC : FI_WAIT_NONE };
	if ((ret = fi_cq_open(r->dom, &cq, &r->cq, NULL))) return ret;
	if ((ret = fi_endpoint(r->dom, r->info, &r->ep, NULL))) return ret;
	if ((ret = fi_ep_bind(r->ep, &r->av->fid, 0))) return ret;
	if ((ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))) return ret;
	if ((ret = fi_enable(r->ep))) return ret;
	if ((ret = fi_getname(&r->ep->fid, name, namelen))) return ret;
	r->len = len;
	r->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->buf == MAP_FAILED) return -FI_ENOMEM;
	if ((ret = fi_mr_reg(r->dom, r->buf, len, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1, 0, &r->mr, NULL))) return ret;
	if (r->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		if ((ret = fi_mr_bind(r->mr, &r->ep->fid, 0)) || (ret = fi_mr_enable(r->mr))) return ret;
	}
	r->desc = fi_mr_desc(r->mr);
	r->virt = (r->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
	return 0;
}

static uint64_t raw_key(raw *r) { return fi_mr_key(r->mr); }
static uint64_t raw_base(raw *r) { return (uint64_t)(uintptr_t)r->buf; }
static const char *raw_prov(raw *r) { return r->info->fabric_attr->prov_name; }

static int raw_peer(raw *r, const void *name, uint64_t key, uint64_t base) {
	if (fi_av_insert(r->av, name, 1, &r->peer, 0, NULL) != 1) return -FI_EINVAL;
	r->rkey = key;
	r->raddr = r->virt ? base : 0;
	return 0;
}

// poll reads completions: local ones decrement outstanding, remote CQ data
// increments remote. Returns <0 on error.
static int raw_poll(raw *r) {
	struct fi_cq_data_entry e[32];
	ssize_t n = r->sread ? fi_cq_sread(r->cq, e, 32, NULL, 100) : fi_cq_read(r->cq, e, 32);
	if (n == -FI_EAGAIN) return 0;
	if (n < 0) {
		struct fi_cq_err_entry err = {0};
		fi_cq_readerr(r->cq, &err, 0);
		return err.err ? -err.err : (int)n;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (e[i].flags & FI_REMOTE_WRITE) r->remote++;
		else r->outstanding--;
	}
	return (int)n;
}

static int raw_write(raw *r, size_t off, size_t len, int data) {
	struct iovec iov = { r->buf + off, len };
	struct fi_rma_iov rma = { r->raddr + off, len, r->rkey };
	struct fi_msg_rma m = { &iov, &r->desc, 1, r->peer, &rma, 1, &r->ctx, 1 };
	uint64_t flags = data ? FI_REMOTE_CQ_DATA : 0;
	int inject = r->inject > 0 && len <= r->inject;
	flags |= inject ? FI_INJECT : FI_COMPLETION;
	ssize_t ret;
	while ((ret = fi_writemsg(r->ep, &m, flags)) == -FI_EAGAIN) {
		int p = raw_poll(r);
		if (p < 0) return p;
	}
	if (ret == 0 && !inject) r->outstanding++;
	return (int)ret;
}

// wait_remote polls until n remote CQ data entries arrived in total.
static int raw_wait_remote(raw *r, long n) {
	while (r->remote < n) {
		int p = raw_poll(r);
		if (p < 0) return p;
	}
	return 0;
}

// raw_pingpong: iters round trips of size-byte writedata; returns the mean
// one-way time in microseconds (half a round trip), as fi_pingpong does.
static double raw_pingpong(raw *r, int server, size_t size, int iters, int warmup) {
	double t0 = 0;
	long base = r->remote;
	for (int i = 0; i < warmup + iters; i++) {
		if (i == warmup) t0 = now_us();
		if (!server) {
			if (raw_write(r, 0, size, 1)) return -1;
			if (raw_wait_remote(r, base + i + 1)) return -1;
		} else {
			if (raw_wait_remote(r, base + i + 1)) return -1;
			if (raw_write(r, 0, size, 1)) return -1;
		}
	}
	double t = now_us() - t0;
	while (r->outstanding > 0) if (raw_poll(r) < 0) return -1;
	return t / iters / 2;
}

// raw_bw: the client posts iters writes of size bytes with at most window
// in flight, the last with CQ data; the server answers it with a zero-byte
// writedata. Returns MB/s (1e6 bytes) from the first post to the answer.
static double raw_bw(raw *r, int server, size_t size, int iters, int window) {
	long base = r->remote;
	if (server) {
		if (raw_wait_remote(r, base + 1)) return -1;
		if (raw_write(r, 0, 0, 1)) return -1;
		while (r->outstanding > 0) if (raw_poll(r) < 0) return -1;
		return 0;
	}
	double t0 = now_us();
	for (int i = 0; i < iters; i++) {
		while (r->outstanding >= window) if (raw_poll(r) < 0) return -1;
		if (raw_write(r, 0, size, i == iters - 1)) return -1;
	}
	if (raw_wait_remote(r, base + 1)) return -1;
	double t = now_us() - t0;
	while (r->outstanding > 0) if (raw_poll(r) < 0) return -1;
	return (double)size * iters / t;
}

// The Go loop's calls (rawgo.go), on an opaque pointer: each returns the
// counter the loop tests next (remote CQ data entries seen, or local
// completions outstanding), or a negative libfabric code, so every post
// and every CQ read is one cgo call.
static long rawgo_count(raw *r, int remote) { return remote ? r->remote : r->outstanding; }
long rawgo_counter(void *r, int remote) { return rawgo_count((raw *)r, remote); }
long rawgo_poll(void *r, int remote) {
	int p = raw_poll((raw *)r);
	return p < 0 ? p : rawgo_count((raw *)r, remote);
}
long rawgo_write(void *r, size_t len, int data) {
	int ret = raw_write((raw *)r, 0, len, data);
	return ret < 0 ? ret : rawgo_count((raw *)r, 0);
}

static void raw_close(raw *r) {
	if (r->mr) fi_close(&r->mr->fid);
	if (r->ep) fi_close(&r->ep->fid);
	if (r->cq) fi_close(&r->cq->fid);
	if (r->av) fi_close(&r->av->fid);
	if (r->dom) fi_close(&r->dom->fid);
	if (r->fab) fi_close(&r->fab->fid);
	if (r->info) fi_freeinfo(r->info);
	if (r->buf) munmap(r->buf, r->len);
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
	"unsafe"
)

// rawSide is one process of the raw anchor.
type rawSide struct {
	r       *C.raw
	goLoop  bool // drive the loops from Go (rawgo.go)
	goYield bool // and yield as the ofi provider does (goPoller)
}

func rawError(what string, ret C.int) error {
	if ret >= 0 {
		return nil
	}
	return fmt.Errorf("raw libfabric: %s: %s (%d)", what, C.GoString(C.fi_strerror(-ret)), int(ret))
}

// openRaw opens the fabric and exchanges addresses with the peer over the
// TCP connection conn (the server sends first).
func openRaw(prov, iface string, bufLen int, conn net.Conn, server bool, inject int, sread bool) (*rawSide, error) {
	r := (*C.raw)(C.calloc(1, C.size_t(unsafe.Sizeof(C.raw{}))))
	r.sread = cbool(sread)
	s := &rawSide{r: r}
	cprov, ciface := C.CString(prov), C.CString(iface)
	defer C.free(unsafe.Pointer(cprov))
	defer C.free(unsafe.Pointer(ciface))
	name := make([]byte, 256)
	nameLen := C.size_t(len(name))
	cname := C.malloc(256)
	defer C.free(cname)
	if err := rawError("open", C.raw_open(r, cprov, ciface, C.size_t(bufLen), (*C.char)(cname), &nameLen)); err != nil {
		s.close()
		return nil, err
	}
	r.inject = C.uint64_t(inject)
	copy(name, C.GoBytes(cname, C.int(nameLen)))
	mine := binary.LittleEndian.AppendUint64(nil, uint64(C.raw_key(r)))
	mine = binary.LittleEndian.AppendUint64(mine, uint64(C.raw_base(r)))
	mine = binary.LittleEndian.AppendUint16(mine, uint16(nameLen))
	mine = append(mine, name[:nameLen]...)
	theirs, err := exchange(conn, mine, server)
	if err != nil {
		s.close()
		return nil, err
	}
	key, base := binary.LittleEndian.Uint64(theirs), binary.LittleEndian.Uint64(theirs[8:])
	n := int(binary.LittleEndian.Uint16(theirs[16:]))
	pname := C.CBytes(theirs[18 : 18+n])
	defer C.free(pname)
	if err := rawError("av insert", C.raw_peer(r, pname, C.uint64_t(key), C.uint64_t(base))); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *rawSide) prov() string { return C.GoString(C.raw_prov(s.r)) }

func (s *rawSide) pingpong(server bool, size, iters, warmup int) (time.Duration, error) {
	if s.goLoop {
		return s.pingpongGo(server, size, iters, warmup)
	}
	us := C.raw_pingpong(s.r, cbool(server), C.size_t(size), C.int(iters), C.int(warmup))
	if us < 0 {
		return 0, fmt.Errorf("raw libfabric: ping-pong failed")
	}
	return time.Duration(float64(us) * 1e3), nil
}

func (s *rawSide) bandwidth(server bool, size, iters, window int) (float64, error) {
	if s.goLoop {
		return s.bandwidthGo(server, size, iters, window)
	}
	mbs := C.raw_bw(s.r, cbool(server), C.size_t(size), C.int(iters), C.int(window))
	if mbs < 0 {
		return 0, fmt.Errorf("raw libfabric: bandwidth run failed")
	}
	return float64(mbs), nil
}

func (s *rawSide) close() {
	C.raw_close(s.r)
	C.free(unsafe.Pointer(s.r))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// exchange swaps one length-prefixed message over conn (server first).
func exchange(conn net.Conn, mine []byte, server bool) ([]byte, error) {
	send := func() error {
		b := binary.LittleEndian.AppendUint32(nil, uint32(len(mine)))
		_, err := conn.Write(append(b, mine...))
		return err
	}
	recv := func() ([]byte, error) {
		var h [4]byte
		if _, err := io.ReadFull(conn, h[:]); err != nil {
			return nil, err
		}
		b := make([]byte, binary.LittleEndian.Uint32(h[:]))
		_, err := io.ReadFull(conn, b)
		return b, err
	}
	if server {
		if err := send(); err != nil {
			return nil, err
		}
		return recv()
	}
	b, err := recv()
	if err != nil {
		return nil, err
	}
	return b, send()
}

// sync is a barrier over the control connection.
func sync(conn net.Conn, server bool) error {
	_, err := exchange(conn, []byte{1}, server)
	return err
}
