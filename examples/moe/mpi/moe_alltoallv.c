/*
 * moe_alltoallv.c -- the Open MPI baseline of examples/moe: MoE dispatch and
 * combine done with MPI_Alltoallv over shared memory, on the same routing and
 * token values as the Go example (-write-routing), timed the same way.
 *
 * Per round, as package moe/twosided does with rdmactor's AllToAllV:
 *   dispatch: layout (tokens per rank, token-in-rank mask, positions); pack each
 *     token row once per destination rank, in token order, into a send buffer
 *     grouped by rank, and its routing (source index, local expert ids, weights)
 *     into a second one; MPI_Alltoall of the counts; MPI_Alltoallv of the rows;
 *     MPI_Alltoallv of the routing; tokens per local expert.
 *   combine: MPI_Alltoallv of the received rows back to their source ranks (no
 *     expert compute between, as DeepEP's and the Go example's timings do),
 *     leaving out the rank's own rows (summed where they are, as package moe
 *     does; MPI_Alltoallv's displacements allow it); at the source, each
 *     token's rows summed in float32 and rounded once to bf16 (round to
 *     nearest even).
 * Every round starts after an MPI_Barrier; dispatch and combine are timed on
 * each rank, and each figure is the median over rounds of the slowest rank.
 * The first round is checked: with the rows sent back unchanged, token t
 * returns as x[t] times the number of ranks it went to, exactly.
 *
 * Build:  mpicc -O3 -march=native -o moe_alltoallv moe_alltoallv.c
 * Run:    mpirun -np 2 ./moe_alltoallv ROUTING.csv HIDDEN EXPERTS TOPK ITERS WARMUP
 * ROUTING.csv is the Go example's -write-routing file (moe.Trace's CSV: one
 * line per token of the job, rank 0's first, topk ids then topk weights; a
 * header line); rank r takes tokens [r*T/n, (r+1)*T/n).
 * Output (rank 0): "mpi_normal_<T>tok_x<H>_bf16_<figure>: value unit" lines.
 */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, nranks;

static void *xmalloc(size_t n) /* page-aligned and touched */
{
    void *p = NULL;
    if (n == 0) n = 64;
    if (posix_memalign(&p, 4096, n)) { fprintf(stderr, "out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    memset(p, 0, n);
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static uint16_t bf16(float f) /* round to nearest even, as moe.BF16 */
{
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40);
    b += 0x7fffu + ((b >> 16) & 1);
    return (uint16_t)(b >> 16);
}

static float f32(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* read the CSV trace: total tokens *T, ids and weights [T][K] */
static void read_trace(const char *path, int K, long *T, int32_t **idx, float **w)
{
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); MPI_Abort(MPI_COMM_WORLD, 1); }
    size_t cap = 1024, n = 0;
    int32_t *I = malloc(cap * K * sizeof *I);
    float *W = malloc(cap * K * sizeof *W);
    char *line = NULL;
    size_t len = 0;
    while (getline(&line, &len, f) > 0) {
        char *p = line;
        if (*p == '#' || *p == '\n' || (*p != '-' && (*p < '0' || *p > '9'))) continue;
        if (n == cap) {
            cap *= 2;
            I = realloc(I, cap * K * sizeof *I);
            W = realloc(W, cap * K * sizeof *W);
        }
        for (int k = 0; k < 2 * K; k++) {
            char *end;
            double v = strtod(p, &end);
            if (end == p) { fprintf(stderr, "%s: bad line %zu\n", path, n + 1); MPI_Abort(MPI_COMM_WORLD, 1); }
            if (k < K) I[n * K + k] = (int32_t)v; else W[n * K + k - K] = (float)v;
            p = end + (*end == ',');
        }
        n++;
    }
    free(line);
    fclose(f);
    *T = (long)n; *idx = I; *w = W;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 7) {
        if (rank == 0) fprintf(stderr, "usage: %s ROUTING.csv HIDDEN EXPERTS TOPK ITERS WARMUP\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int H = atoi(argv[2]), E = atoi(argv[3]), K = atoi(argv[4]);
    const int iters = atoi(argv[5]), warmup = atoi(argv[6]);
    const int n = nranks, me = rank, L = E / n, EW = 1 + 2 * K;
    long Tall;
    int32_t *idx_all;
    float *w_all;
    read_trace(argv[1], K, &Tall, &idx_all, &w_all);
    const long lo = me * Tall / n, hi = (me + 1) * Tall / n;
    const int T = (int)(hi - lo), maxT = (int)((Tall + n - 1) / n);
    for (long i = 0; i < Tall * K; i++)
        if (idx_all[i] < -1 || idx_all[i] >= E) {
            if (rank == 0) fprintf(stderr, "%s: expert id %d of token %ld outside [-1, %d)\n", argv[1], idx_all[i], i / K, E);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    if (E % n != 0) {
        if (rank == 0) fprintf(stderr, "%d experts over %d ranks: want a multiple\n", E, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int32_t *topk = idx_all + lo * K;
    const float *wts = w_all + lo * K;

    /* inputs: the Go example's token values */
    uint16_t *x = xmalloc((size_t)T * H * 2);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] = bf16((float)((int)((i * 7 + me * 3) % 9) - 4));

    MPI_Datatype row, ent;
    MPI_Type_contiguous(H, MPI_UINT16_T, &row);
    MPI_Type_commit(&row);
    MPI_Type_contiguous(EW, MPI_UINT32_T, &ent);
    MPI_Type_commit(&ent);

    size_t cap = (size_t)n * maxT; /* rows a rank sends or receives at most */
    uint16_t *sendx = xmalloc(cap * H * 2), *recvx = xmalloc(cap * H * 2), *comb = xmalloc(cap * H * 2);
    uint32_t *sendm = xmalloc(cap * EW * 4), *recvm = xmalloc(cap * EW * 4);
    uint16_t *out = xmalloc((size_t)T * H * 2);
    unsigned char *inrank = xmalloc((size_t)T * n);
    int32_t *pos = xmalloc((size_t)T * n * 4);
    int32_t *rsrc = xmalloc(cap * 4), *ridx = xmalloc(cap * K * 4);
    float *rw = xmalloc(cap * K * 4), *acc = xmalloc((size_t)H * 4);
    int *scnt = calloc(n, sizeof(int)), *rcnt = calloc(n, sizeof(int));
    int *scnt2 = calloc(n, sizeof(int)), *rcnt2 = calloc(n, sizeof(int));
    int *sdsp = calloc(n, sizeof(int)), *rdsp = calloc(n, sizeof(int));
    int *perexp = calloc(L, sizeof(int));
    double *td = malloc(iters * sizeof(double)), *tc = malloc(iters * sizeof(double)), *tt = malloc(iters * sizeof(double));
    long cross = 0; /* rows this rank receives from other ranks */
    int nrecv = 0;

    for (int it = 0; it < warmup + iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        /* ---- dispatch ---- */
        memset(scnt, 0, n * sizeof(int));
        memset(inrank, 0, (size_t)T * n);
        for (int t = 0; t < T; t++) {
            for (int k = 0; k < K; k++)
                if (topk[t * K + k] >= 0) inrank[t * n + topk[t * K + k] / L] = 1;
            for (int r = 0; r < n; r++) {
                pos[t * n + r] = inrank[t * n + r] ? scnt[r]++ : -1;
            }
        }
        for (int r = 0, at = 0; r < n; r++) { sdsp[r] = at; at += scnt[r]; }
        for (int r = 0; r < n; r++) { /* pack rows (in runs) and routing */
            for (int t = 0; t < T;) {
                if (!inrank[t * n + r]) { t++; continue; }
                int m = 1;
                while (t + m < T && inrank[(t + m) * n + r]) m++;
                memcpy(sendx + ((size_t)sdsp[r] + pos[t * n + r]) * H, x + (size_t)t * H, (size_t)m * H * 2);
                for (int j = 0; j < m; j++) {
                    uint32_t *e = sendm + ((size_t)sdsp[r] + pos[(t + j) * n + r]) * EW;
                    e[0] = (uint32_t)(t + j);
                    for (int k = 0; k < K; k++) {
                        int32_t id = topk[(t + j) * K + k];
                        float w = 0;
                        if (id >= 0 && id / L == r) { w = wts[(t + j) * K + k]; id %= L; } else id = -1;
                        e[1 + k] = (uint32_t)id;
                        memcpy(&e[1 + K + k], &w, 4);
                    }
                }
                t += m;
            }
        }
        MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
        nrecv = 0;
        for (int r = 0; r < n; r++) { rdsp[r] = nrecv; nrecv += rcnt[r]; }
        MPI_Alltoallv(sendx, scnt, sdsp, row, recvx, rcnt, rdsp, row, MPI_COMM_WORLD);
        MPI_Alltoallv(sendm, scnt, sdsp, ent, recvm, rcnt, rdsp, ent, MPI_COMM_WORLD);
        memset(perexp, 0, L * sizeof(int));
        for (int i = 0; i < nrecv; i++) {
            const uint32_t *e = recvm + (size_t)i * EW;
            rsrc[i] = (int32_t)e[0];
            for (int k = 0; k < K; k++) {
                ridx[i * K + k] = (int32_t)e[1 + k];
                memcpy(&rw[i * K + k], &e[1 + K + k], 4);
                if (ridx[i * K + k] >= 0) perexp[ridx[i * K + k]]++;
            }
        }
        double t1 = now();
        /* ---- combine: rows back as they are, then the sum per token ---- */
        /* this rank's own rows are summed where they are (as moe does) */
        memcpy(rcnt2, rcnt, n * sizeof(int));
        memcpy(scnt2, scnt, n * sizeof(int));
        rcnt2[me] = scnt2[me] = 0;
        MPI_Alltoallv(recvx, rcnt2, rdsp, row, comb, scnt2, sdsp, row, MPI_COMM_WORLD);
        for (int t = 0; t < T; t++) {
            int first = 1;
            for (int r = 0; r < n; r++) {
                int p = pos[t * n + r];
                if (p < 0) continue;
                const uint16_t *src = r == me ? recvx + ((size_t)rdsp[me] + p) * H : comb + ((size_t)sdsp[r] + p) * H;
                if (first) { for (int h = 0; h < H; h++) acc[h] = f32(src[h]); first = 0; }
                else for (int h = 0; h < H; h++) acc[h] += f32(src[h]);
            }
            if (first) memset(acc, 0, (size_t)H * 4);
            uint16_t *o = out + (size_t)t * H;
            for (int h = 0; h < H; h++) o[h] = bf16(acc[h]);
        }
        double t2 = now();
        if (it == 0) { /* check: x[t] times the number of ranks t went to */
            long bad = 0;
            for (int t = 0; t < T; t++) {
                int m = 0;
                for (int r = 0; r < n; r++) m += inrank[t * n + r];
                for (int h = 0; h < H; h++)
                    if (f32(out[(size_t)t * H + h]) != f32(x[(size_t)t * H + h]) * m) bad++;
            }
            MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (bad) {
                if (rank == 0) fprintf(stderr, "check failed: %ld wrong elements\n", bad);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            cross = nrecv - rcnt[me];
        }
        if (it >= warmup) { td[it - warmup] = t1 - t0; tc[it - warmup] = t2 - t1; tt[it - warmup] = t2 - t0; }
    }
    MPI_Allreduce(MPI_IN_PLACE, td, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, tc, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, tt, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &cross, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    qsort(td, iters, sizeof(double), cmp_double);
    qsort(tc, iters, sizeof(double), cmp_double);
    qsort(tt, iters, sizeof(double), cmp_double);
    if (rank == 0) {
        double bytes = (double)cross / n * H * 2, d = td[iters / 2], c = tc[iters / 2], t = tt[iters / 2];
        char p[96];
        snprintf(p, sizeof p, "mpi_normal_%dtok_x%d_bf16", maxT, H);
        printf("# Open MPI MPI_Alltoallv, %d ranks, %d tokens per rank, check passed; %.2f MB cross-rank per rank per phase\n", n, maxT, bytes / 1e6);
        printf("%s_dispatch_time: %.3f us\n%s_combine_time: %.3f us\n%s_total_time: %.3f us\n", p, d * 1e6, p, c * 1e6, p, t * 1e6);
        printf("%s_dispatch_bw: %.3f GB/s\n%s_combine_bw: %.3f GB/s\n", p, bytes / d / 1e9, p, bytes / c / 1e9);
    }
    MPI_Type_free(&row);
    MPI_Type_free(&ent);
    MPI_Finalize();
    return 0;
}
