/*
 * collbench: MPI_Barrier and MPI_Allreduce latency, the Open MPI side of
 * scripts/twohosts.sh collectives (rdmactor's side: examples/barrier and
 * examples/collectives, on the same ranks).
 *
 * Method, as rdmactor's bench/perf (so the figures compare): each figure
 * is warmed up and calibrated (iterations grow 4x until one run lasts
 * MIN_SECONDS), then timed REPS times with about REP_SECONDS per run;
 * every run starts with an MPI_Barrier and is timed on the slowest rank
 * (the ranks' elapsed times are max-reduced); the figure is the median
 * time per operation, in microseconds.
 *
 * All-reduce: MPI_FLOAT, MPI_SUM, sizes in bytes from -b to -e by factor
 * -f (examples/collectives' default type and reduction).
 *
 * Usage: mpirun ... collbench [-r REP_SECONDS] [-n REPS] [-b MIN] [-e MAX] [-f FACTOR]
 * Output, from rank 0, one line per figure:
 *
 *	barrier_latency: 12.345 us
 *	allreduce_8B_sum_latency: 23.456 us
 *	...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIN_SECONDS 0.05

static double rep_seconds = 0.4;
static int reps = 5;

typedef void (*op_fn)(void *arg);

static void op_barrier(void *arg)
{
	(void)arg;
	MPI_Barrier(MPI_COMM_WORLD);
}

struct ar {
	float *send, *recv;
	int count;
};

static void op_allreduce(void *arg)
{
	struct ar *a = arg;
	MPI_Allreduce(a->send, a->recv, a->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* timed returns the slowest rank's seconds for iters operations. */
static double timed(op_fn fn, void *arg, long iters)
{
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long i = 0; i < iters; i++)
		fn(arg);
	double dt = MPI_Wtime() - t0, max;
	MPI_Allreduce(&dt, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return max;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* measure returns the median seconds per operation. */
static double measure(op_fn fn, void *arg)
{
	long iters = 1;
	double dt;
	while ((dt = timed(fn, arg, iters)) < MIN_SECONDS)
		iters *= 4;
	iters = (long)(iters * rep_seconds / dt);
	if (iters < 1)
		iters = 1;
	double *per = malloc(sizeof(double) * reps);
	for (int i = 0; i < reps; i++)
		per[i] = timed(fn, arg, iters) / iters;
	qsort(per, reps, sizeof(double), cmp);
	double m = per[reps / 2];
	free(per);
	return m;
}

static long parse_size(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	switch (*end) {
	case 'K': case 'k': v <<= 10; break;
	case 'M': case 'm': v <<= 20; break;
	case 'G': case 'g': v <<= 30; break;
	}
	return v;
}

int main(int argc, char **argv)
{
	long lo = 8, hi = 1 << 20, factor = 16;
	int rank, size, c;
	char host[256];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((c = getopt(argc, argv, "r:n:b:e:f:")) != -1) {
		switch (c) {
		case 'r': rep_seconds = atof(optarg); break;
		case 'n': reps = atoi(optarg); break;
		case 'b': lo = parse_size(optarg); break;
		case 'e': hi = parse_size(optarg); break;
		case 'f': factor = atol(optarg); break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: collbench [-r rep_seconds] [-n reps] [-b min] [-e max] [-f factor]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (reps < 1 || rep_seconds <= 0 || lo < 4 || hi < lo || factor < 2) {
		if (rank == 0)
			fprintf(stderr, "collbench: bad arguments\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	gethostname(host, sizeof host);
	if (rank == 0)
		printf("# Open MPI collbench: %d ranks, %.2f s x %d repetitions (median, slowest rank)\n", size, rep_seconds, reps);
	/* Where each rank runs, so the output shows the 2 + 2 placement. */
	char *all = rank == 0 ? malloc(256 * size) : NULL;
	MPI_Gather(host, 256, MPI_CHAR, all, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (int i = 0; i < size; i++)
			printf("# rank %d on %s\n", i, all + 256 * i);
		free(all);
	}

	double t = measure(op_barrier, NULL);
	if (rank == 0)
		printf("barrier_latency: %.3f us\n", t * 1e6);

	struct ar a;
	a.send = malloc(hi);
	a.recv = malloc(hi);
	for (long i = 0; i < hi / 4; i++)
		a.send[i] = (float)(rank + 1);
	for (long n = lo; n <= hi; n *= factor) {
		a.count = (int)(n / 4);
		/* Checked once: every element is the sum of the ranks + 1. */
		op_allreduce(&a);
		float want = (float)size * (size + 1) / 2;
		long wrong = 0;
		for (int i = 0; i < a.count; i++)
			wrong += a.recv[i] != want;
		t = measure(op_allreduce, &a);
		if (rank == 0)
			printf("allreduce_%ldB_sum_latency: %.3f us\n", n, t * 1e6);
		if (wrong) {
			fprintf(stderr, "collbench: rank %d: %ld wrong elements in the %ld B all-reduce\n", rank, wrong, n);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	free(a.send);
	free(a.recv);
	MPI_Finalize();
	return 0;
}
