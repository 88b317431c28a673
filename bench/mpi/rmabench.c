/*
 * rmabench: the Open MPI anchor of rdmactor's shm benchmarks
 * (scripts/bench.sh, scripts/bench_collectives.sh; bench/mpi/rmabench.sh
 * installs Open MPI, builds and runs it). One host, shared memory.
 *
 * Usage: mpirun -np N rmabench [-r REP_SECONDS] [-n REPS] [-p PREFIX] [MODE...]
 *
 * MODE is one or more of p2p, rma, barrier, coll, memcpy, or all (the
 * default: p2p rma barrier coll memcpy, in that order). p2p and rma need
 * exactly 2 ranks; barrier and coll run on any number. PREFIX is put in
 * front of every figure name (say "osc_sm." when mpirun selects another
 * osc component). Output, from rank 0: one "name: value unit" line per
 * figure; lines starting with "#" are comments. GB/s is 1e9 bytes/s.
 *
 * Method, as rdmactor's bench/perf and cmd/rdmabench (so the figures
 * compare): each figure is warmed up and calibrated (iterations grow 4x
 * until one run lasts REP_SECONDS/8, at most 0.05 s), then run REPS times
 * (default 5) with about REP_SECONDS (default 0.4) per run. Every run
 * starts with MPI_Barrier and is timed on the slowest rank (the ranks'
 * elapsed times are max-reduced); the figure is the median time per
 * iteration. Buffers are page-aligned and touched before timing.
 *
 * p2p (MPI 3.1 §3.2 blocking MPI_Send/MPI_Recv; §3.7 MPI_Isend, MPI_Irecv,
 * MPI_Waitall):
 *   p2p_pingpong_{8B,64KiB}_half_rtt   Send then Recv of that size, rank 0
 *                                      to 1 and back; round trip / 2, us
 *   p2p_stream_1MiB_bw                 rank 0 sends 1 MiB messages, 8 in
 *                                      flight, then waits for a 1 B ack
 * rma: one window per rank from MPI_Win_allocate (§11.2.2), one passive
 * target epoch MPI_Win_lock_all (§11.5.3) around all figures. MPI_Win_flush
 * (§11.5.4) completes the calling rank's operations to the target "both at
 * the origin and at the target", so what follows a flush is ordered after
 * the data:
 *   rma_put_8B_flush_latency           rank 0: MPI_Put (§11.3.1) of 8 B +
 *                                      flush, us per pair
 *   rma_fetch_and_op_8B_flush_latency  rank 0: MPI_Fetch_and_op (§11.3.4)
 *                                      MPI_SUM of an int64 + flush
 *   rma_put_notify_8B_one_way          put with notification: Put 8 B, flush,
 *                                      Fetch_and_op(+1) on the peer's counter,
 *                                      flush; the peer polls its own counter
 *                                      with Fetch_and_op(MPI_NO_OP) + flush
 *                                      (atomic with the +1, §11.7.1), then
 *                                      answers the same way; round trip / 2
 *   rma_put_notify_8B_one_way_loadpoll the same, polling with MPI_Win_sync
 *                                      (§11.5.4) and an acquire load of the
 *                                      counter: valid only in the unified
 *                                      memory model (MPI_WIN_UNIFIED, §11.4;
 *                                      checked through MPI_WIN_MODEL, §11.2.6)
 *   rma_put_1MiB_flush_bw              rank 0: MPI_Put of 1 MiB + flush
 * Every notified put carries its sequence number; the receiver checks it
 * after the counter moved and the run warns about stale payloads.
 * barrier (§5.3):
 *   barrier_<N>ranks[_oversubscribed]_latency   MPI_Barrier, us
 *                                      (_oversubscribed: more ranks than
 *                                      online CPUs)
 * coll (§5.9.6 MPI_Allreduce, §5.8 MPI_Alltoall), each checked once
 * before it is timed:
 *   allreduce_8B_sum_latency           one MPI_DOUBLE, MPI_SUM, us
 *   allreduce_4MiB_{time,algbw}        4 MiB of MPI_DOUBLE, MPI_SUM; ms,
 *                                      algbw = 4 MiB / time
 *   alltoall_{128,4096}tok_x7168_bf16_{time,algbw}
 *                                      blocks of tokens x 7168 x 2 B per
 *                                      pair (MPI_UINT16_T for bf16), a MoE
 *                                      dispatch; ms, algbw = bytes sent per
 *                                      rank (all N blocks, own included) /
 *                                      time
 * memcpy: rank 0 alone, after MPI_Finalize (the other ranks exit):
 *   memcpy_{1MiB,64MiB}_bw             glibc memcpy between two buffers
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1L << 20)

static double rep_seconds = 0.4;
static int reps = 5;
static const char *prefix = "";
static int rank, nranks;

/* clock_gettime (POSIX) rather than MPI_Wtime: memcpy is timed after
 * MPI_Finalize, when MPI_Wtime may no longer be called (MPI 3.1 §8.7). */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* buffer returns size bytes, page-aligned and touched (no page faults in
 * the timed loops), filled with fill. */
static void *buffer(size_t size, int fill)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, size) != 0) {
		fprintf(stderr, "rmabench: rank %d: cannot allocate %zu bytes\n", rank, size);
		exit(1);
	}
	memset(p, fill, size);
	return p;
}

static void figure(const char *name, double value, const char *unit)
{
	if (rank == 0) {
		printf("%s%s: %.3f %s\n", prefix, name, value, unit);
		fflush(stdout);
	}
}

/* ---- timing ---- */

/* A loop is one figure's body: it runs iters iterations on every rank. */
typedef void (*loop_fn)(long iters, void *arg);

/* run times loop on every rank of comm and returns the slowest rank's
 * seconds; with MPI_COMM_NULL it times this rank alone. */
static double run(MPI_Comm comm, loop_fn loop, void *arg, long iters)
{
	if (comm != MPI_COMM_NULL)
		MPI_Barrier(comm);
	double t0 = now();
	loop(iters, arg);
	double dt = now() - t0;
	if (comm != MPI_COMM_NULL)
		MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm);
	return dt;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* measure returns the median seconds per iteration of loop. All ranks
 * see the same max-reduced times, so they agree on the iteration counts. */
static double measure(MPI_Comm comm, loop_fn loop, void *arg)
{
	double warm = rep_seconds / 8 < 0.05 ? rep_seconds / 8 : 0.05, dt;
	long iters = 1;
	while ((dt = run(comm, loop, arg, iters)) < warm)
		iters *= 4;
	iters = (long)((double)iters * rep_seconds / dt);
	if (iters < 1)
		iters = 1;
	double *per = malloc(sizeof(double) * (size_t)reps);
	for (int i = 0; i < reps; i++)
		per[i] = run(comm, loop, arg, iters) / (double)iters;
	qsort(per, (size_t)reps, sizeof(double), by_value);
	double median = per[reps / 2];
	free(per);
	return median;
}

/* ---- p2p: two-sided, 2 ranks ---- */

#define IN_FLIGHT 8

struct p2p {
	char *buf; /* IN_FLIGHT messages of the largest size */
	int bytes;
};

static void pingpong(long iters, void *arg)
{
	struct p2p *p = arg;
	int peer = 1 - rank;
	for (long i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(p->buf, p->bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
			MPI_Recv(p->buf, p->bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(p->buf, p->bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(p->buf, p->bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
		}
	}
}

/* stream: rank 0 sends iters messages, IN_FLIGHT at a time, into rank 1's
 * IN_FLIGHT receive buffers; rank 1's ack ends the run once all arrived. */
static void stream(long iters, void *arg)
{
	struct p2p *p = arg;
	MPI_Request req[IN_FLIGHT];
	char ack = 0;
	for (long done = 0; done < iters;) {
		int k = iters - done < IN_FLIGHT ? (int)(iters - done) : IN_FLIGHT;
		for (int j = 0; j < k; j++) {
			if (rank == 0)
				MPI_Isend(p->buf, p->bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[j]);
			else
				MPI_Irecv(p->buf + (size_t)j * (size_t)p->bytes, p->bytes, MPI_BYTE, 0, 1,
					  MPI_COMM_WORLD, &req[j]);
		}
		MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
		done += k;
	}
	if (rank == 0)
		MPI_Recv(&ack, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
}

static void bench_p2p(void)
{
	struct p2p p = { buffer(IN_FLIGHT * MiB, 1), 8 };
	figure("p2p_pingpong_8B_half_rtt", measure(MPI_COMM_WORLD, pingpong, &p) / 2 * 1e6, "us");
	p.bytes = 64 * 1024;
	figure("p2p_pingpong_64KiB_half_rtt", measure(MPI_COMM_WORLD, pingpong, &p) / 2 * 1e6, "us");
	p.bytes = (int)MiB;
	figure("p2p_stream_1MiB_bw", (double)MiB / measure(MPI_COMM_WORLD, stream, &p) / 1e9, "GB/s");
	free(p.buf);
}

/* ---- rma: one-sided, 2 ranks ---- */

/* Window layout, the same on both ranks; each word on its own cache line. */
enum {
	W_COUNTER = 0,   /* int64: notifications received */
	W_PAYLOAD = 64,  /* int64: the notified put's data */
	W_ATOMIC = 128,  /* int64: target of the plain fetch-and-op figure */
	W_BULK = 4096,   /* 1 MiB: target of the bandwidth figure */
	W_SIZE = W_BULK + (int)MiB,
};

struct rma {
	MPI_Win win;
	char *mem;      /* this rank's window */
	char *src;      /* 1 MiB origin buffer */
	int peer;
	int loadpoll;   /* wait with MPI_Win_sync + load, not Fetch_and_op */
	int64_t sent;   /* notified puts sent; each carries its number */
	int64_t got;    /* notifications consumed */
	long stale;     /* payloads that were not there when the counter was */
};

static void put8(long iters, void *arg)
{
	struct rma *r = arg;
	int64_t v = 1;
	if (rank != 0)
		return;
	for (long i = 0; i < iters; i++) {
		MPI_Put(&v, 1, MPI_INT64_T, r->peer, W_ATOMIC, 1, MPI_INT64_T, r->win);
		MPI_Win_flush(r->peer, r->win);
	}
}

static void fetch_add8(long iters, void *arg)
{
	struct rma *r = arg;
	int64_t one = 1, old;
	if (rank != 0)
		return;
	for (long i = 0; i < iters; i++) {
		MPI_Fetch_and_op(&one, &old, MPI_INT64_T, r->peer, W_ATOMIC, MPI_SUM, r->win);
		MPI_Win_flush(r->peer, r->win);
	}
}

static void put1m(long iters, void *arg)
{
	struct rma *r = arg;
	if (rank != 0)
		return;
	for (long i = 0; i < iters; i++) {
		MPI_Put(r->src, (int)MiB, MPI_BYTE, r->peer, W_BULK, (int)MiB, MPI_BYTE, r->win);
		MPI_Win_flush(r->peer, r->win);
	}
}

/* notify: the payload is complete at the target (first flush) before the
 * counter's increment is issued. */
static void notify(struct rma *r)
{
	int64_t seq = ++r->sent, one = 1, old;
	MPI_Put(&seq, 1, MPI_INT64_T, r->peer, W_PAYLOAD, 1, MPI_INT64_T, r->win);
	MPI_Win_flush(r->peer, r->win);
	MPI_Fetch_and_op(&one, &old, MPI_INT64_T, r->peer, W_COUNTER, MPI_SUM, r->win);
	MPI_Win_flush(r->peer, r->win);
}

/* await waits for the next notification on this rank's counter, then
 * checks that its payload is there. */
static void await(struct rma *r)
{
	int64_t want = ++r->got, count, none = 0;
	do {
		if (r->loadpoll) {
			MPI_Win_sync(r->win);
			count = __atomic_load_n((int64_t *)(r->mem + W_COUNTER), __ATOMIC_ACQUIRE);
		} else {
			MPI_Fetch_and_op(&none, &count, MPI_INT64_T, rank, W_COUNTER, MPI_NO_OP, r->win);
			MPI_Win_flush(rank, r->win);
		}
	} while (count < want);
	MPI_Win_sync(r->win);
	if (*(volatile int64_t *)(r->mem + W_PAYLOAD) != want)
		r->stale++;
}

static void notify_pingpong(long iters, void *arg)
{
	struct rma *r = arg;
	for (long i = 0; i < iters; i++) {
		if (rank == 0) {
			notify(r);
			await(r);
		} else {
			await(r);
			notify(r);
		}
	}
}

static void bench_rma(void)
{
	struct rma r = { .peer = 1 - rank, .src = buffer(MiB, 1) };
	int *model = NULL, flag = 0;

	MPI_Win_allocate(W_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r.mem, &r.win);
	memset(r.mem, 0, W_SIZE);
	MPI_Win_get_attr(r.win, MPI_WIN_MODEL, &model, &flag);
	MPI_Win_lock_all(0, r.win);
	MPI_Barrier(MPI_COMM_WORLD);

	figure("rma_put_8B_flush_latency", measure(MPI_COMM_WORLD, put8, &r) * 1e6, "us");
	figure("rma_fetch_and_op_8B_flush_latency", measure(MPI_COMM_WORLD, fetch_add8, &r) * 1e6, "us");
	figure("rma_put_notify_8B_one_way", measure(MPI_COMM_WORLD, notify_pingpong, &r) / 2 * 1e6, "us");
	if (flag && *model == MPI_WIN_UNIFIED) {
		r.loadpoll = 1;
		figure("rma_put_notify_8B_one_way_loadpoll",
		       measure(MPI_COMM_WORLD, notify_pingpong, &r) / 2 * 1e6, "us");
	} else if (rank == 0) {
		printf("# %srma_put_notify_8B_one_way_loadpoll not measured: the window is not MPI_WIN_UNIFIED\n", prefix);
	}
	figure("rma_put_1MiB_flush_bw", (double)MiB / measure(MPI_COMM_WORLD, put1m, &r) / 1e9, "GB/s");

	MPI_Allreduce(MPI_IN_PLACE, &r.stale, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0 && r.stale != 0)
		printf("# WARNING: %ld notified puts had a stale payload when their counter moved\n", r.stale);
	MPI_Win_unlock_all(r.win);
	MPI_Win_free(&r.win);
	free(r.src);
}

/* ---- barrier and coll: any number of ranks ---- */

static void barrier(long iters, void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++)
		MPI_Barrier(MPI_COMM_WORLD);
}

static void bench_barrier(void)
{
	char name[64];
	snprintf(name, sizeof name, "barrier_%dranks%s_latency", nranks,
		 nranks > sysconf(_SC_NPROCESSORS_ONLN) ? "_oversubscribed" : "");
	figure(name, measure(MPI_COMM_WORLD, barrier, NULL) * 1e6, "us");
}

struct coll {
	void *send, *recv;
	int count; /* elements: per rank (allreduce), per pair (alltoall) */
};

static void allreduce(long iters, void *arg)
{
	struct coll *c = arg;
	for (long i = 0; i < iters; i++)
		MPI_Allreduce(c->send, c->recv, c->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static void alltoall(long iters, void *arg)
{
	struct coll *c = arg;
	for (long i = 0; i < iters; i++)
		MPI_Alltoall(c->send, c->count, MPI_UINT16_T, c->recv, c->count, MPI_UINT16_T, MPI_COMM_WORLD);
}

/* fail stops the job when a collective's result was wrong on any rank. */
static void fail(long wrong, const char *what, size_t bytes)
{
	MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (wrong == 0) {
		if (rank == 0)
			printf("# %s %zu B: verified\n", what, bytes);
		return;
	}
	if (rank == 0)
		fprintf(stderr, "rmabench: %s %zu B: %ld wrong elements\n", what, bytes, wrong);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* check_allreduce: rank k contributes k+1 in every element, so every
 * element of the sum is N(N+1)/2 (exact in a double). */
static void check_allreduce(struct coll *c)
{
	double *s = c->send, *r = c->recv, want = (double)nranks * (nranks + 1) / 2;
	size_t n = (size_t)c->count;
	long wrong = 0;
	for (size_t i = 0; i < n; i++)
		s[i] = rank + 1;
	allreduce(1, c);
	for (size_t i = 0; i < n; i++)
		wrong += r[i] != want;
	fail(wrong, "MPI_Allreduce", n * sizeof(double));
}

/* check_alltoall: element i of the block from rank k to rank j is
 * (k*N + j + i) mod 2^16. */
static void check_alltoall(struct coll *c)
{
	uint16_t *s = c->send, *r = c->recv;
	size_t n = (size_t)c->count;
	long wrong = 0;
	for (int j = 0; j < nranks; j++)
		for (size_t i = 0; i < n; i++)
			s[(size_t)j * n + i] = (uint16_t)(rank * nranks + j + (long)i);
	alltoall(1, c);
	for (int k = 0; k < nranks; k++)
		for (size_t i = 0; i < n; i++)
			wrong += r[(size_t)k * n + i] != (uint16_t)(k * nranks + rank + (long)i);
	fail(wrong, "MPI_Alltoall", n * sizeof(uint16_t) * (size_t)nranks);
}

static void bench_coll(void)
{
	static const int tokens[] = { 128, 4096 };
	char name[96];
	double t;

	struct coll c = { buffer(4 * MiB, 0), buffer(4 * MiB, 0), 1 };
	check_allreduce(&c);
	figure("allreduce_8B_sum_latency", measure(MPI_COMM_WORLD, allreduce, &c) * 1e6, "us");
	c.count = (int)(4 * MiB / sizeof(double));
	check_allreduce(&c);
	t = measure(MPI_COMM_WORLD, allreduce, &c);
	figure("allreduce_4MiB_time", t * 1e3, "ms");
	figure("allreduce_4MiB_algbw", (double)(4 * MiB) / t / 1e9, "GB/s");
	free(c.send);
	free(c.recv);

	for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
		size_t block = (size_t)tokens[i] * 7168 * 2;
		struct coll a = { buffer(block * (size_t)nranks, 0), buffer(block * (size_t)nranks, 0), (int)(block / 2) };
		check_alltoall(&a);
		t = measure(MPI_COMM_WORLD, alltoall, &a);
		snprintf(name, sizeof name, "alltoall_%dtok_x7168_bf16_time", tokens[i]);
		figure(name, t * 1e3, "ms");
		snprintf(name, sizeof name, "alltoall_%dtok_x7168_bf16_algbw", tokens[i]);
		figure(name, (double)block * nranks / t / 1e9, "GB/s");
		free(a.send);
		free(a.recv);
	}
}

/* ---- memcpy: rank 0 alone ---- */

struct copy {
	char *dst, *src;
	size_t size;
};

static void copy(long iters, void *arg)
{
	struct copy *c = arg;
	for (long i = 0; i < iters; i++) {
		memcpy(c->dst, c->src, c->size);
		__asm__ volatile("" ::: "memory"); /* every copy happens */
	}
}

static void bench_memcpy(void)
{
	static const struct {
		const char *name;
		size_t size;
	} sizes[] = { { "memcpy_1MiB_bw", MiB }, { "memcpy_64MiB_bw", 64 * MiB } };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct copy c = { buffer(sizes[i].size, 0), buffer(sizes[i].size, 1), sizes[i].size };
		figure(sizes[i].name, (double)c.size / measure(MPI_COMM_NULL, copy, &c) / 1e9, "GB/s");
		free(c.dst);
		free(c.src);
	}
}

/* ---- main ---- */

enum { M_P2P = 1, M_RMA = 2, M_BARRIER = 4, M_COLL = 8, M_MEMCPY = 16, M_ALL = 31 };

static int parse_mode(const char *s)
{
	static const struct {
		const char *name;
		int bit;
	} modes[] = {
		{ "p2p", M_P2P }, { "rma", M_RMA }, { "barrier", M_BARRIER },
		{ "coll", M_COLL }, { "memcpy", M_MEMCPY }, { "all", M_ALL },
	};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(s, modes[i].name) == 0)
			return modes[i].bit;
	return 0;
}

static void usage(const char *why)
{
	if (rank == 0)
		fprintf(stderr, "rmabench: %s\nusage: rmabench [-r rep_seconds] [-n reps] [-p prefix] "
				"[p2p|rma|barrier|coll|memcpy|all]...\n", why);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
	int modes = 0, c;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((c = getopt(argc, argv, "r:n:p:")) != -1) {
		switch (c) {
		case 'r': rep_seconds = atof(optarg); break;
		case 'n': reps = atoi(optarg); break;
		case 'p': prefix = optarg; break;
		default: usage("bad flag");
		}
	}
	for (int i = optind; i < argc; i++) {
		int m = parse_mode(argv[i]);
		if (m == 0)
			usage("unknown mode");
		modes |= m;
	}
	if (modes == 0)
		modes = M_ALL;
	if (rep_seconds <= 0 || reps < 1)
		usage("-r and -n must be positive");
	if ((modes & (M_P2P | M_RMA)) && nranks != 2)
		usage("p2p and rma need exactly 2 ranks");
	if (rank == 0)
		printf("# rmabench: %d ranks, %.2f s x %d repetitions (median, slowest rank)\n",
		       nranks, rep_seconds, reps);

	if (modes & M_P2P)
		bench_p2p();
	if (modes & M_RMA)
		bench_rma();
	if (modes & M_BARRIER)
		bench_barrier();
	if (modes & M_COLL)
		bench_coll();
	MPI_Finalize();
	/* After MPI_Finalize the other ranks exit: rank 0 copies alone. */
	if ((modes & M_MEMCPY) && rank == 0)
		bench_memcpy();
	return 0;
}
