/* The two elementwise passes of the repro matmul rule on CPU, one call each (gensyn_py/repro/native_matmul.py is
 * the Python face of this module; gensyn_py/repro/matmul.py states the rule).
 *
 * Why native: a product of the demo's size (32 x 64 x 64) is a few microseconds of BLAS, but aligning both operands
 * to their block exponents and rounding the result took about thirty torch kernels, each a few microseconds of
 * dispatch, so a repro training step of a small model cost two and a half times the plain one. Here the alignment
 * of an operand is one pass and the final rounding another. For a large product the exact integer product between
 * them stays a float64 GEMM of the BLAS torch ships (align, then finish); a small one is aligned, multiplied and
 * rounded in one call (small_matmul), where the GEMM is a plain loop: every product of aligned integers and every
 * partial sum is exact under the bounds below, so its order, vector width and FMA contraction do not matter.
 *
 * align: every finite float32 x of a block (a row of A, or a column of B, over the contraction index K) becomes
 *   the integer sign * RNE(m / 2**(E_block - E_x)), written as a float64 (exact: |q| <= 2**24), with m the 24-bit
 *   significand (hidden bit included, 0 for subnormals), E_x = max(biased exponent field, 1) and E_block the
 *   largest E_x of the block. The block's unit 2**(E_block - 150) is written too. The call returns whether any
 *   entry was not finite (the caller then takes the general path, which implements the rule's NaN and inf cases)
 *   and, for the choice of an exact summation, the largest L1 norm and the largest sum of squares of a block's
 *   integers (both exact: at most 2**14 * 2**24 and 2**14 * 2**48).
 * finish: out = float32(N * ua * ub), N the exact integer product held in float64, ua and ub powers of two; the
 *   products are exact in float64 (at least 2**-298 for N != 0) and the conversion is the one rounding (ties to
 *   even, gradual underflow, overflow to inf); N == 0 gives +0.
 *
 * One float64 GEMM of the aligned integers is exact when every partial sum stays within 2**53: K <= 32
 * (|q| <= 2**24), a largest block L1 norm of at most 2**29 on either side, or (Cauchy–Schwarz) a product of the
 * largest block sums of squares of at most 2**106.
 *
 * Pointers and strides come from torch tensors whose dtype, device and shapes the Python side checked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_sum_rule.h" /* field_of, pow2 and the sum rule over a row */

/* A block's statistics for the choice of an exact summation (see one_gemm_exact): the largest L1 norm of a block's
 * integers (exact in float64: below 2**38) and the largest sum of their squares (float64, within a relative
 * 2**-39 of the exact sum, summed in any order: the caller's bound keeps a margin for it). Where `groups` is set,
 * each block's sums of squares over `g` equal groups of K are written there too (block-major: g per block), for
 * the choice of K-chunks (exact_chunks.py). */
typedef struct {
    double l1, sq;
    double *groups;
    Py_ssize_t g;
} stats_t;


/* align_rows: blocks are the rows of the row-major r x k float32 x: q (row-major, float64) gets the aligned
 * integers, units the block units. Returns 1 when an entry is not finite (then q is incomplete).
 * align_columns: blocks are the columns of the row-major k x n float32 x (scratch: 6 * n doubles).
 * Both are built twice, as the GEMM loop is: for AVX2 and for any x86-64 (the conversions and norms run on vectors
 * either way).
 * A row is converted in one vector loop over the whole row; its groups' sums of squares are then read from q while
 * the row is still in the core's first cache (a vector loop per group took 4x as long where groups are 5 or 20
 * entries: K = 320 or 1280). Columns were tried in strips of 256 (the exponent pass and the conversion reading x from
 * the second-level cache): slower here than two passes over whole rows. */
#define ALIGN_FUNCS(SUFFIX, ATTR) \
ATTR static int align_rows##SUFFIX(const uint32_t *x, Py_ssize_t r, Py_ssize_t k, double *q, double *units, stats_t *st) {      \
    double l1_top = 0.0, sq_top = 0.0;                                                                                          \
    const Py_ssize_t g = st->groups ? st->g : 1, len = k / g;                                                                   \
    for (Py_ssize_t i = 0; i < r; ++i) {                                                                                        \
        const uint32_t *row = x + i * k;                                                                                        \
        int top = 1;                                                                                                            \
        for (Py_ssize_t p = 0; p < k; ++p) {                                                                                    \
            int e = field_of(row[p]);                                                                                           \
            top = e > top ? e : top;                                                                                            \
        }                                                                                                                       \
        if (top == 0xFF) return 1;                                                                                              \
        const double c = 1.5 * pow2(top - 98), inv = pow2(150 - top);                                                           \
        const float *xf = (const float *)row;                                                                                   \
        double *qrow = q + i * k, l1 = 0.0, sq = 0.0;                                                                           \
_Pragma("omp simd reduction(+ : l1)")                                                                                          \
        for (Py_ssize_t p = 0; p < k; ++p) {                                                                                    \
            double v = (((double)xf[p] + c) - c) * inv;                                                                         \
            qrow[p] = v;                                                                                                        \
            l1 += fabs(v);                                                                                                      \
        }                                                                                                                       \
        if (len >= 16) {                                                                                                        \
            for (Py_ssize_t grp = 0; grp < g; ++grp) {                                                                          \
                double gsq = 0.0;                                                                                               \
_Pragma("omp simd reduction(+ : gsq)")                                                                                         \
                for (Py_ssize_t p = grp * len; p < (grp + 1) * len; ++p) gsq += qrow[p] * qrow[p];                              \
                if (st->groups) st->groups[i * g + grp] = gsq;                                                                  \
                sq += gsq;                                                                                                      \
            }                                                                                                                   \
        } else {                                                                                                                \
            for (Py_ssize_t grp = 0; grp < g; ++grp) {                                                                          \
                double gsq = 0.0;                                                                                               \
                for (Py_ssize_t p = grp * len; p < (grp + 1) * len; ++p) gsq += qrow[p] * qrow[p];                              \
                if (st->groups) st->groups[i * g + grp] = gsq;                                                                  \
                sq += gsq;                                                                                                      \
            }                                                                                                                   \
        }                                                                                                                       \
        units[i] = pow2(top - 150);                                                                                             \
        l1_top = l1 > l1_top ? l1 : l1_top;                                                                                     \
        sq_top = sq > sq_top ? sq : sq_top;                                                                                     \
    }                                                                                                                           \
    st->l1 = l1_top;                                                                                                            \
    st->sq = sq_top;                                                                                                            \
    return 0;                                                                                                                   \
}                                                                                                                               \
                                                                                                                                \
ATTR static int align_columns##SUFFIX(const uint32_t *x, Py_ssize_t k, Py_ssize_t n, double *q, double *units, double *scratch, \
                         stats_t *st) {                                                                                         \
    double *c = scratch, *inv = scratch + n, *l1 = scratch + 2 * n, *sq = scratch + 3 * n, *gsq = scratch + 4 * n;              \
    int *top = (int *)(void *)(scratch + 5 * n);                                                                                \
    const Py_ssize_t g = st->groups ? st->g : 1, len = k / g;                                                                   \
    for (Py_ssize_t j = 0; j < n; ++j) top[j] = 1;                                                                              \
    int any = 1;                                                                                                                \
    for (Py_ssize_t p = 0; p < k; ++p) {                                                                                        \
        const uint32_t *row = x + p * n;                                                                                        \
        for (Py_ssize_t j = 0; j < n; ++j) {                                                                                    \
            int e = field_of(row[j]);                                                                                           \
            top[j] = e > top[j] ? e : top[j];                                                                                   \
        }                                                                                                                       \
    }                                                                                                                           \
    for (Py_ssize_t j = 0; j < n; ++j) any = top[j] > any ? top[j] : any;                                                       \
    if (any == 0xFF) return 1;                                                                                                  \
    for (Py_ssize_t j = 0; j < n; ++j) {                                                                                        \
        int t = top[j];                                                                                                         \
        c[j] = 1.5 * pow2(t - 98);                                                                                              \
        inv[j] = pow2(150 - t);                                                                                                 \
        l1[j] = 0.0;                                                                                                            \
        sq[j] = 0.0;                                                                                                            \
        gsq[j] = 0.0;                                                                                                           \
        units[j] = pow2(t - 150);                                                                                               \
    }                                                                                                                           \
    for (Py_ssize_t p = 0; p < k; ++p) {                                                                                        \
        const float *xf = (const float *)(x + p * n);                                                                           \
        double *qrow = q + p * n;                                                                                               \
        for (Py_ssize_t j = 0; j < n; ++j) {                                                                                    \
            double v = (((double)xf[j] + c[j]) - c[j]) * inv[j];                                                                \
            qrow[j] = v;                                                                                                        \
            l1[j] += fabs(v);                                                                                            \
            gsq[j] += v * v;                                                                                                    \
        }                                                                                                                       \
        if ((p + 1) % len == 0) { /* the end of a group of K */                                                                 \
            for (Py_ssize_t j = 0; j < n; ++j) {                                                                                \
                if (st->groups) st->groups[j * g + p / len] = gsq[j];                                                           \
                sq[j] += gsq[j];                                                                                                \
                gsq[j] = 0.0;                                                                                                   \
            }                                                                                                                   \
        }                                                                                                                       \
    }                                                                                                                           \
    double l1_top = 0.0, sq_top = 0.0;                                                                                          \
    for (Py_ssize_t j = 0; j < n; ++j) {                                                                                        \
        l1_top = l1[j] > l1_top ? l1[j] : l1_top;                                                                               \
        sq_top = sq[j] > sq_top ? sq[j] : sq_top;                                                                               \
    }                                                                                                                           \
    st->l1 = l1_top;                                                                                                            \
    st->sq = sq_top;                                                                                                            \
    return 0;                                                                                                                   \
}                                                                                                                               \

/* sum_rows: out[i] = the sum rule over row i of the row-major r x k float32 x (_sum_rule.h); sum_columns: over each
 * column of the row-major k x n x (scratch: 3 * n doubles), the same way: a pass for each column's exponent, then
 * one that adds each entry rounded to its column's unit. Returns 1 when an entry is not finite (then out is
 * incomplete). Two reads of x and no aligned copy. */
#define SUM_FUNCS(SUFFIX, ATTR) \
ATTR static int sum_rows##SUFFIX(const uint32_t *x, Py_ssize_t r, Py_ssize_t k, float *out) {                               \
    for (Py_ssize_t i = 0; i < r; ++i)                                                                                      \
        if (sum_rule_row((const float *)(x + i * k), k, out + i)) return 1;                                                 \
    return 0;                                                                                                               \
}                                                                                                                           \
                                                                                                                            \
ATTR static int sum_columns##SUFFIX(const uint32_t *x, Py_ssize_t k, Py_ssize_t n, float *out, double *scratch) {          \
    double *c = scratch, *total = scratch + n;                                                                              \
    int *top = (int *)(void *)(scratch + 2 * n), any = 1;                                                                   \
    for (Py_ssize_t j = 0; j < n; ++j) top[j] = 1;                                                                          \
    for (Py_ssize_t p = 0; p < k; ++p) {                                                                                    \
        const uint32_t *row = x + p * n;                                                                                    \
        for (Py_ssize_t j = 0; j < n; ++j) {                                                                                \
            int e = field_of(row[j]);                                                                                       \
            top[j] = e > top[j] ? e : top[j];                                                                               \
        }                                                                                                                   \
    }                                                                                                                       \
    for (Py_ssize_t j = 0; j < n; ++j) any = top[j] > any ? top[j] : any;                                                   \
    if (any == 0xFF) return 1;                                                                                              \
    for (Py_ssize_t j = 0; j < n; ++j) {                                                                                    \
        c[j] = 1.5 * pow2(top[j] - 98);                                                                                     \
        total[j] = 0.0;                                                                                                     \
    }                                                                                                                       \
    for (Py_ssize_t p = 0; p < k; ++p) {                                                                                    \
        const float *xf = (const float *)(x + p * n);                                                                       \
        for (Py_ssize_t j = 0; j < n; ++j) total[j] += ((double)xf[j] + c[j]) - c[j];                                       \
    }                                                                                                                       \
    for (Py_ssize_t j = 0; j < n; ++j) out[j] = (float)(total[j] + 0.0);                                                    \
    return 0;                                                                                                               \
}

ALIGN_FUNCS(_baseline, )
SUM_FUNCS(_baseline, )
#if defined(__x86_64__) && defined(__GNUC__)
ALIGN_FUNCS(_avx2, __attribute__((target("avx2"))))
SUM_FUNCS(_avx2, __attribute__((target("avx2"))))
#endif

typedef int (*align_rows_t)(const uint32_t *, Py_ssize_t, Py_ssize_t, double *, double *, stats_t *);
typedef int (*align_columns_t)(const uint32_t *, Py_ssize_t, Py_ssize_t, double *, double *, double *, stats_t *);
static align_rows_t align_rows = align_rows_baseline;
static align_columns_t align_columns = align_columns_baseline;
typedef int (*sum_rows_t)(const uint32_t *, Py_ssize_t, Py_ssize_t, float *);
typedef int (*sum_columns_t)(const uint32_t *, Py_ssize_t, Py_ssize_t, float *, double *);
static sum_rows_t sum_rows = sum_rows_baseline;
static sum_columns_t sum_columns = sum_columns_baseline;

/* x (r x c, strides s0, s1 in elements) copied row-major into dst, or x itself where it already is. */
static const uint32_t *row_major(const uint32_t *x, Py_ssize_t r, Py_ssize_t c, Py_ssize_t s0, Py_ssize_t s1,
                                 uint32_t *dst) {
    if (s1 == 1 && (s0 == c || r <= 1)) return x;
    for (Py_ssize_t i = 0; i < r; ++i)
        for (Py_ssize_t j = 0; j < c; ++j) dst[i * c + j] = x[i * s0 + j * s1];
    return dst;
}

#define SQUARES_LIMIT 81129638414606681695789005144064.0 /* 2**106 */

/* Whether one float64 GEMM of the aligned integers is exact (the module comment). The sums of squares are within a
 * relative 2**-39 of the exact ones, so their product is compared with 2**106 less a margin of 2**-30. */
static int one_gemm_exact(Py_ssize_t k, const stats_t *a, const stats_t *b) {
    const double l1_bound = 536870912.0; /* 2**29 */
    if (k <= 32 || a->l1 <= l1_bound || b->l1 <= l1_bound) return 1;
    return a->sq * b->sq <= SQUARES_LIMIT * (1.0 - 1.0 / 1073741824.0);
}

/* acc (m x n) = qa (m x k) @ qb (k x n), all row-major float64 holding exact integers. A tile of 4 rows by 2W
 * columns of acc stays in registers over the whole k (eight W-wide vectors: W = 8 with AVX-512, else 4, which the
 * baseline build splits in two), so each step loads two vectors of qb and four scalars of qa for 8W multiply-adds.
 * The AVX-512 build takes 16-column tiles, then 8-column ones, then single columns. */
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

#define LOADV(V, p) ({ V v_; memcpy(&v_, (p), sizeof v_); v_; })
#define STOREV(V, p, v) do { V v_ = (v); memcpy((p), &v_, sizeof v_); } while (0)

/* Tiles of 2W columns from column j0 on (j0 ends after the last whole tile). */
#define GEMM_TILES(V, W)                                                                                 \
    for (; j0 + 2 * (W) <= n; j0 += 2 * (W)) {                                                           \
        Py_ssize_t i = 0;                                                                                \
        for (; i + 4 <= m; i += 4) {                                                                     \
            V c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};     \
            const double *a0 = qa + i * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;                     \
            for (Py_ssize_t p = 0; p < k; ++p) {                                                         \
                const V b0 = LOADV(V, qb + p * n + j0), b1 = LOADV(V, qb + p * n + j0 + (W));            \
                c00 += a0[p] * b0; c01 += a0[p] * b1;                                                    \
                c10 += a1[p] * b0; c11 += a1[p] * b1;                                                    \
                c20 += a2[p] * b0; c21 += a2[p] * b1;                                                    \
                c30 += a3[p] * b0; c31 += a3[p] * b1;                                                    \
            }                                                                                            \
            double *o = acc + i * n + j0;                                                                \
            STOREV(V, o, c00); STOREV(V, o + (W), c01); o += n;                                          \
            STOREV(V, o, c10); STOREV(V, o + (W), c11); o += n;                                          \
            STOREV(V, o, c20); STOREV(V, o + (W), c21); o += n;                                          \
            STOREV(V, o, c30); STOREV(V, o + (W), c31);                                                  \
        }                                                                                                \
        for (; i < m; ++i) {                                                                             \
            V c0 = {0}, c1 = {0};                                                                        \
            for (Py_ssize_t p = 0; p < k; ++p) {                                                         \
                c0 += qa[i * k + p] * LOADV(V, qb + p * n + j0);                                         \
                c1 += qa[i * k + p] * LOADV(V, qb + p * n + j0 + (W));                                   \
            }                                                                                            \
            STOREV(V, acc + i * n + j0, c0); STOREV(V, acc + i * n + j0 + (W), c1);                      \
        }                                                                                                \
    }

/* The columns from j0 on, one at a time. */
#define GEMM_REST                                                                                        \
    for (; j0 < n; ++j0) {                                                                               \
        for (Py_ssize_t i = 0; i < m; ++i) {                                                             \
            double c = 0.0;                                                                              \
            for (Py_ssize_t p = 0; p < k; ++p) c += qa[i * k + p] * qb[p * n + j0];                      \
            acc[i * n + j0] = c;                                                                         \
        }                                                                                                \
    }

#define GEMM_ARGS const double *restrict qa, const double *restrict qb, double *restrict acc, Py_ssize_t m, \
                  Py_ssize_t k, Py_ssize_t n
typedef void (*gemm_t)(GEMM_ARGS);
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512vl"))) static void gemm_avx512(GEMM_ARGS) {
    Py_ssize_t j0 = 0;
    GEMM_TILES(v8d, 8)
    GEMM_TILES(v4d, 4)
    GEMM_REST
}
__attribute__((target("avx2,fma"))) static void gemm_avx2(GEMM_ARGS) {
    Py_ssize_t j0 = 0;
    GEMM_TILES(v4d, 4)
    GEMM_REST
}
#endif
static void gemm_baseline(GEMM_ARGS) {
    Py_ssize_t j0 = 0;
    GEMM_TILES(v4d, 4)
    GEMM_REST
}

static gemm_t gemm = gemm_baseline;

/* The widest loops the processor has where `simd` is asked for (AVX-512 only when `widest`), else the baselines;
 * returns their name. */
static const char *choose_gemm(int simd, int widest) {
    gemm = gemm_baseline;
    align_rows = align_rows_baseline;
    align_columns = align_columns_baseline;
    sum_rows = sum_rows_baseline;
    sum_columns = sum_columns_baseline;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!simd || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return "baseline";
    gemm = gemm_avx2;
    align_rows = align_rows_avx2; /* the alignment passes measured no faster on 512-bit vectors: AVX2's serve both */
    align_columns = align_columns_avx2;
    sum_rows = sum_rows_avx2;
    sum_columns = sum_columns_avx2;
    if (!widest || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vl")) return "avx2";
    gemm = gemm_avx512;
    return "avx512";
#endif
    return "baseline";
}

/* out = float32(n * ua[i] * ub[j]) over a rows x cols block; n == 0 (either sign) gives +0, the rule's N = 0, while
 * a nonzero n whose result underflows keeps its sign. */
static void finish_rows(const double *n, const double *ua, const double *ub, float *out, Py_ssize_t rows,
                        Py_ssize_t cols) {
    for (Py_ssize_t i = 0; i < rows; ++i) {
        const double *nrow = n + i * cols;
        float *orow = out + i * cols;
        const double a = ua[i];
        for (Py_ssize_t j = 0; j < cols; ++j) {
            const double v = nrow[j] + 0.0; /* exact; turns -0 into +0 */
            orow[j] = (float)((v * a) * ub[j]);
        }
    }
}

enum { DONE = 0, NOT_FINITE = 1, NOT_ONE_GEMM = 2, NO_MEMORY = 3 };

/* The calling thread's scratch memory, kept between calls: a fresh allocation of tens of kilobytes costs page faults
 * that take as long as a small product itself. Up to KEPT_BYTES is kept per thread and freed when the thread ends
 * (a pthread key's destructor: a solver may train each unit on a thread of its own); a larger request is allocated
 * for the call and freed by the caller (`owned`). */
#define KEPT_BYTES ((size_t)16 << 20)

typedef struct {
    void *memory;
    size_t bytes;
} scratch_t;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p) {
    scratch_t *s = p;
    free(s->memory);
    free(s);
}

static void scratch_make_key(void) { (void)pthread_key_create(&scratch_key, scratch_free); }

static void *workspace(size_t bytes, int *owned) {
    *owned = bytes > KEPT_BYTES;
    if (*owned) return malloc(bytes);
    pthread_once(&scratch_once, scratch_make_key);
    scratch_t *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return NULL;
        if (pthread_setspecific(scratch_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (bytes > s->bytes) {
        void *grown = realloc(s->memory, bytes);
        if (!grown) return NULL;
        s->memory = grown;
        s->bytes = bytes;
    }
    return s->memory;
}

/* One operand of a batch: (batch, rows, cols) float32 with strides in elements. */
typedef struct {
    const uint32_t *data;
    Py_ssize_t rows, cols, s_batch, s0, s1;
} operand_t;

/* Aligns item t of x into q (row-major) and units: blocks are its rows (`by_rows`) or its columns. */
static int align_item(const operand_t *x, Py_ssize_t t, int by_rows, double *q, double *units, uint32_t *copy,
                      double *scratch, stats_t *st) {
    const uint32_t *src = row_major(x->data + t * x->s_batch, x->rows, x->cols, x->s0, x->s1, copy);
    return by_rows ? align_rows(src, x->rows, x->cols, q, units, st)
                   : align_columns(src, x->rows, x->cols, q, units, scratch, st);
}

/* The whole rule for (batch, m, k) @ (batch, k, n) into the contiguous float32 out; returns one of the codes
 * above (anything but DONE leaves out incomplete, and the caller takes the general path). */
static int small_product(const operand_t *a, const operand_t *b, float *out, Py_ssize_t batch) {
    const Py_ssize_t m = a->rows, k = a->cols, n = b->cols;
    const Py_ssize_t doubles = m * k + k * n + m * n + m + n + 6 * n, words = m * k > k * n ? m * k : k * n;
    int owned;
    double *qa = workspace(sizeof(double) * (size_t)doubles + sizeof(uint32_t) * (size_t)words, &owned);
    if (!qa) return NO_MEMORY;
    double *qb = qa + m * k, *acc = qb + k * n, *ua = acc + m * n, *ub = ua + m, *scratch = ub + n;
    uint32_t *copy = (uint32_t *)(void *)(scratch + 6 * n);
    int code = DONE;
    for (Py_ssize_t t = 0; t < batch && code == DONE; ++t) {
        stats_t sa = {0.0, 0.0, NULL, 1}, sb = {0.0, 0.0, NULL, 1};
        if (align_item(a, t, 1, qa, ua, copy, scratch, &sa) || align_item(b, t, 0, qb, ub, copy, scratch, &sb)) {
            code = NOT_FINITE;
        } else if (!one_gemm_exact(k, &sa, &sb)) {
            code = NOT_ONE_GEMM;
        } else {
            gemm(qa, qb, acc, m, k, n);
            finish_rows(acc, ua, ub, out + t * m * n, m, n);
        }
    }
    if (owned) free(qa);
    return code;
}

static int parse_operand(PyObject *t, operand_t *x) {
    unsigned long long ptr;
    if (!PyArg_ParseTuple(t, "Knnnnn", &ptr, &x->rows, &x->cols, &x->s_batch, &x->s0, &x->s1)) return 0;
    if (x->rows < 0 || x->cols < 0 || x->rows > (1 << 24) || x->cols > (1 << 24)) {
        PyErr_SetString(PyExc_ValueError, "bad operand sizes");
        return 0;
    }
    x->data = (const uint32_t *)(uintptr_t)ptr;
    return 1;
}

/* small_matmul((a, rows, cols, strides...), (b, ...), out, batch) -> code */
static PyObject *small_matmul(PyObject *self, PyObject *args) {
    PyObject *ta, *tb;
    unsigned long long out_ptr;
    Py_ssize_t batch;
    operand_t a, b;
    if (!PyArg_ParseTuple(args, "O!O!Kn", &PyTuple_Type, &ta, &PyTuple_Type, &tb, &out_ptr, &batch)) return NULL;
    if (!parse_operand(ta, &a) || !parse_operand(tb, &b)) return NULL;
    if (a.cols != b.rows || a.cols > (1 << 14) || batch < 0) {
        PyErr_SetString(PyExc_ValueError, "small_matmul: bad sizes");
        return NULL;
    }
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = small_product(&a, &b, (float *)(uintptr_t)out_ptr, batch);
    Py_END_ALLOW_THREADS
    if (code == NO_MEMORY) return PyErr_NoMemory();
    return PyLong_FromLong(code);
}

/* align((x, rows, cols, strides...), batch, by_rows, q, units, groups, g) -> (not finite, largest L1, largest sum of
 * squares): q (batch, rows, cols) row-major float64, units (batch, blocks); where `groups` is not 0, each block's
 * sums of squares over g equal groups of K there, (batch, blocks, g) float64. */
static PyObject *align(PyObject *self, PyObject *args) {
    PyObject *tx;
    operand_t x;
    Py_ssize_t batch, g;
    int by_rows;
    unsigned long long q_ptr, units_ptr, groups_ptr;
    if (!PyArg_ParseTuple(args, "O!npKKKn", &PyTuple_Type, &tx, &batch, &by_rows, &q_ptr, &units_ptr, &groups_ptr,
                          &g))
        return NULL;
    if (!parse_operand(tx, &x)) return NULL;
    const Py_ssize_t r = x.rows, c = x.cols, blocks = by_rows ? r : c, k = by_rows ? c : r;
    if (g < 1 || k % g) {
        PyErr_SetString(PyExc_ValueError, "align: the groups must divide K");
        return NULL;
    }
    int owned;
    double *scratch = workspace(sizeof(double) * (size_t)(6 * c) + sizeof(uint32_t) * (size_t)(r * c), &owned);
    if (!scratch) return PyErr_NoMemory();
    uint32_t *copy = (uint32_t *)(void *)(scratch + 6 * c);
    double *q = (double *)(uintptr_t)q_ptr, *units = (double *)(uintptr_t)units_ptr;
    double *groups = (double *)(uintptr_t)groups_ptr;
    stats_t all = {0.0, 0.0, NULL, g};
    int special = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < batch && !special; ++t) {
        stats_t one = {0.0, 0.0, groups ? groups + t * blocks * g : NULL, g};
        special = align_item(&x, t, by_rows, q + t * r * c, units + t * blocks, copy, scratch, &one);
        all.l1 = one.l1 > all.l1 ? one.l1 : all.l1;
        all.sq = one.sq > all.sq ? one.sq : all.sq;
    }
    Py_END_ALLOW_THREADS
    if (owned) free(scratch);
    return Py_BuildValue("(Odd)", special ? Py_True : Py_False, all.l1, all.sq);
}

/* v, the float64 nearest the exact integer v + err (err its exact error: only its sign is read), rounded to odd
 * at 53 bits instead: an inexact even v moves one unit toward v + err. Converting that to float32 (24 bits or
 * fewer) is then the one RNE rounding of the exact value, since 53 >= 24 + 2. */
static inline double to_odd(double v, int err_sign) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (err_sign != 0 && !(bits & 1)) bits += ((err_sign > 0) == (v > 0.0)) ? 1 : (uint64_t)-1;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* add_chunk(part, acc, first, count): acc (int64) += part, the exact product of one K-chunk (float64 integers
 * below 2**53); where `first` is nonzero, acc = first + part (first: the first chunk's product). At most 64 chunks
 * of at most 2**53 each: every sum is below 2**59, exact in int64. One pass reads part and acc and writes acc,
 * where the float64 pair sums (TwoSum into hi + lo) it replaces read three arrays and wrote two. */
static PyObject *add_chunk(PyObject *self, PyObject *args) {
    unsigned long long part_ptr, acc_ptr, first_ptr;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "KKKn", &part_ptr, &acc_ptr, &first_ptr, &count)) return NULL;
    const double *restrict part = (const double *)(uintptr_t)part_ptr;
    const double *restrict first = (const double *)(uintptr_t)first_ptr;
    int64_t *restrict acc = (int64_t *)(uintptr_t)acc_ptr;
    Py_BEGIN_ALLOW_THREADS
    if (first != NULL)
        for (Py_ssize_t i = 0; i < count; ++i) acc[i] = (int64_t)first[i] + (int64_t)part[i];
    else
        for (Py_ssize_t i = 0; i < count; ++i) acc[i] += (int64_t)part[i];
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* finish_int(n, ua, ub, out, batch, rows, cols, last): out = float32(N * ua * ub) for the exact integers
 * N = n + last (n int64, last the last K-chunk's float64 product, added here rather than in one more add_chunk pass
 * over n; the sum below 2**62), rounded once: N rounded to odd at 53 bits (an inexact even conversion moves one unit
 * toward N), then scaled exactly and converted with one RNE (53 >= 24 + 2); N == 0 gives +0 (crt_matmul.round_int's
 * steps). */
static PyObject *finish_int(PyObject *self, PyObject *args) {
    unsigned long long n_ptr, ua_ptr, ub_ptr, out_ptr, last_ptr;
    Py_ssize_t batch, rows, cols;
    if (!PyArg_ParseTuple(args, "KKKKnnnK", &n_ptr, &ua_ptr, &ub_ptr, &out_ptr, &batch, &rows, &cols, &last_ptr))
        return NULL;
    const int64_t *n = (const int64_t *)(uintptr_t)n_ptr;
    const double *last = (const double *)(uintptr_t)last_ptr;
    const double *ua = (const double *)(uintptr_t)ua_ptr, *ub = (const double *)(uintptr_t)ub_ptr;
    float *out = (float *)(uintptr_t)out_ptr;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < batch; ++b) {
        for (Py_ssize_t i = 0; i < rows; ++i) {
            const Py_ssize_t row = (b * rows + i) * cols;
            const double *urow = ub + b * cols;
            const double a = ua[b * rows + i];
            for (Py_ssize_t j = 0; j < cols; ++j) {
                const int64_t x = n[row + j] + (int64_t)last[row + j];
                const double v = (double)x;         /* RNE */
                const int64_t err = x - (int64_t)v; /* exact: v is an integer within int64 */
                out[row + j] = (float)((to_odd(v, (err > 0) - (err < 0)) * a) * urow[j]); /* x == 0: +0 */
            }
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* finish_pair(hi, lo, ua, ub, out, batch, rows, cols): out = float32((hi + lo) * ua * ub), the exact integer
 * hi + lo rounded once: TwoSum gives s = fl(hi + lo) and its exact error e; where e is nonzero and s even, s moves one
 * unit toward e (rounding to odd at 53 bits), and converting that to float32 (24 bits or fewer) is the one RNE
 * rounding of the sum, since 53 >= 24 + 2. A zero sum gives +0. */
static PyObject *finish_pair(PyObject *self, PyObject *args) {
    unsigned long long hi_ptr, lo_ptr, ua_ptr, ub_ptr, out_ptr;
    Py_ssize_t batch, rows, cols;
    if (!PyArg_ParseTuple(args, "KKKKKnnn", &hi_ptr, &lo_ptr, &ua_ptr, &ub_ptr, &out_ptr, &batch, &rows, &cols))
        return NULL;
    const double *hi = (const double *)(uintptr_t)hi_ptr, *lo = (const double *)(uintptr_t)lo_ptr;
    const double *ua = (const double *)(uintptr_t)ua_ptr, *ub = (const double *)(uintptr_t)ub_ptr;
    float *out = (float *)(uintptr_t)out_ptr;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < batch; ++b) {
        for (Py_ssize_t i = 0; i < rows; ++i) {
            const Py_ssize_t row = (b * rows + i) * cols;
            const double *urow = ub + b * cols;
            const double a = ua[b * rows + i];
            for (Py_ssize_t j = 0; j < cols; ++j) {
                const double x = hi[row + j], y = lo[row + j], s = x + y, bb = s - x;
                const double e = (x - (s - bb)) + (y - bb);
                const double v = to_odd(s + 0.0, (e > 0.0) - (e < 0.0)); /* + 0.0: -0 -> +0 */
                out[row + j] = (float)((v * a) * urow[j]);
            }
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* sum_blocks((x, rows, cols, strides...), by_rows, out) -> not finite: the sum rule (matmul.repro_sum) over each
 * row (`by_rows`) or each column of a 2-D x: the block's entries aligned to its unit and added exactly (any order),
 * rounded once; a zero sum gives +0. out: rows (or cols) contiguous float32. sum_rows and sum_columns read x twice
 * and write nothing else: aligning into a float64 copy first, then summing that, took 4x as long on the 10M LM's
 * 1024 x 320 column sums (its bias and LayerNorm gradients). */
static PyObject *sum_blocks(PyObject *self, PyObject *args) {
    PyObject *tx;
    operand_t x;
    int by_rows;
    unsigned long long out_ptr;
    if (!PyArg_ParseTuple(args, "O!pK", &PyTuple_Type, &tx, &by_rows, &out_ptr)) return NULL;
    if (!parse_operand(tx, &x)) return NULL;
    const Py_ssize_t r = x.rows, c = x.cols;
    int owned;
    const int strided = !(x.s1 == 1 && (x.s0 == c || r <= 1)); /* row_major copies it */
    double *scratch = workspace(sizeof(double) * (size_t)(3 * c) + sizeof(uint32_t) * (size_t)(strided ? r * c : 0),
                                &owned);
    if (!scratch) return PyErr_NoMemory();
    uint32_t *copy = (uint32_t *)(void *)(scratch + 3 * c);
    float *out = (float *)(uintptr_t)out_ptr;
    int special;
    Py_BEGIN_ALLOW_THREADS
    const uint32_t *src = row_major(x.data, r, c, x.s0, x.s1, copy);
    special = by_rows ? sum_rows(src, r, c, out) : sum_columns(src, r, c, out, scratch);
    Py_END_ALLOW_THREADS
    if (owned) free(scratch);
    return PyBool_FromLong(special);
}

/* one_gemm_exact(k, l1_a, sq_a, l1_b, sq_b) -> bool: the same test small_matmul applies. */
static PyObject *one_gemm(PyObject *self, PyObject *args) {
    Py_ssize_t k;
    stats_t a = {0.0, 0.0, NULL, 1}, b = {0.0, 0.0, NULL, 1};
    if (!PyArg_ParseTuple(args, "ndddd", &k, &a.l1, &a.sq, &b.l1, &b.sq)) return NULL;
    return PyBool_FromLong(one_gemm_exact(k, &a, &b));
}

/* Squared bound on every partial sum of a chunk's GEMM (2**53 squared), less a margin for the rounding of the sums of
 * squares (exact_chunks.py's LIMIT). */
#define CHUNK_LIMIT (0x1p106 * (1.0 - 0x1p-30))

/* chunk_ends(fa, rows_a, fb, rows_b, g, max_chunks) -> tuple or None: the fewest contiguous chunks of the g equal
 * groups of K in each of which one float64 GEMM is exact (exact_chunks.py: the largest row sum of squares of A
 * times the largest column sum of squares of B within CHUNK_LIMIT), as the group index ending each chunk. fa
 * (rows_a, g) and fb (rows_b, g) are row-major float64 sums of squares per group. Greedy: each chunk takes groups
 * while the bound holds; the sums only grow with a chunk, so no split has fewer chunks. None where one group alone
 * fails or more than max_chunks are needed (the 12-bit slices are then exact, or faster). */
/* next = now + the group `end` of each of the `rows` rows of f (rows x g, row-major); returns the largest. */
static double extended_max(const double *now, double *next, const double *f, Py_ssize_t rows, Py_ssize_t g,
                           Py_ssize_t end) {
    double m = 0.0;
    for (Py_ssize_t i = 0; i < rows; ++i) {
        next[i] = now[i] + f[i * g + end];
        m = next[i] > m ? next[i] : m;
    }
    return m;
}

static PyObject *chunk_ends(PyObject *self, PyObject *args) {
    unsigned long long fa_ptr, fb_ptr;
    Py_ssize_t rows_a, rows_b, g, max_chunks;
    if (!PyArg_ParseTuple(args, "KnKnnn", &fa_ptr, &rows_a, &fb_ptr, &rows_b, &g, &max_chunks)) return NULL;
    if (g < 1 || g > 64 || rows_a < 1 || rows_b < 1) {
        PyErr_SetString(PyExc_ValueError, "chunk_ends: 1 <= g <= 64 groups and at least one row each");
        return NULL;
    }
    const double *fa = (const double *)(uintptr_t)fa_ptr, *fb = (const double *)(uintptr_t)fb_ptr;
    /* the running sums of the chunk so far and the candidate sums with one more group, swapped when it fits */
    double *run = PyMem_RawMalloc(sizeof(double) * 2 * (size_t)(rows_a + rows_b));
    if (run == NULL) return PyErr_NoMemory();
    double *now = run, *next = run + rows_a + rows_b;
    Py_ssize_t ends[64], n = 0, start = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    while (ok && start < g) {
        for (Py_ssize_t i = 0; i < rows_a + rows_b; ++i) now[i] = 0.0;
        Py_ssize_t end = start;
        while (end < g) {
            const double ma = extended_max(now, next, fa, rows_a, g, end);
            const double mb = extended_max(now + rows_a, next + rows_a, fb, rows_b, g, end);
            if (ma * mb > CHUNK_LIMIT) break; /* finite: non-finite operands took the general path before */
            double *t = now;
            now = next;
            next = t;
            ++end;
        }
        if (end == start || n == max_chunks) ok = 0;
        else ends[n++] = end;
        start = end;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(run);
    if (!ok) Py_RETURN_NONE;
    PyObject *out = PyTuple_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(out, i, PyLong_FromSsize_t(ends[i]));
    return out;
}

/* finish(n, ua, ub, out, batch, rows, cols): out = float32(n * ua * ub) per item, +0 for n == 0. */
static PyObject *finish(PyObject *self, PyObject *args) {
    unsigned long long n_ptr, ua_ptr, ub_ptr, out_ptr;
    Py_ssize_t batch, rows, cols;
    if (!PyArg_ParseTuple(args, "KKKKnnn", &n_ptr, &ua_ptr, &ub_ptr, &out_ptr, &batch, &rows, &cols)) return NULL;
    const double *n = (const double *)(uintptr_t)n_ptr;
    const double *ua = (const double *)(uintptr_t)ua_ptr, *ub = (const double *)(uintptr_t)ub_ptr;
    float *out = (float *)(uintptr_t)out_ptr;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < batch; ++b)
        finish_rows(n + b * rows * cols, ua + b * rows, ub + b * cols, out + b * rows * cols, rows, cols);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* use_simd(on, widest=True) -> str: choose_gemm(on, widest), the name of the loops now in use; the tests run each
 * the processor has. */
static PyObject *use_simd(PyObject *self, PyObject *args) {
    int on, widest = 1;
    if (!PyArg_ParseTuple(args, "p|p", &on, &widest)) return NULL;
    return PyUnicode_FromString(choose_gemm(on, widest));
}

static PyMethodDef METHODS[] = {
    {"small_matmul", small_matmul, METH_VARARGS, "The whole rule in one call: 0 done, 1 not finite, 2 not one GEMM."},
    {"align", align, METH_VARARGS, "Aligned integers and block units of an operand, and its largest block norms."},
    {"one_gemm_exact", one_gemm, METH_VARARGS, "Whether one float64 GEMM of the aligned integers is exact."},
    {"finish", finish, METH_VARARGS, "float32(n * ua * ub), +0 for n == 0: the rule's one rounding."},
    {"add_chunk", add_chunk, METH_VARARGS, "Add one K-chunk's exact product into an int64 sum."},
    {"finish_int", finish_int, METH_VARARGS, "finish for int64 N: round to odd at 53 bits, then to float32."},
    {"chunk_ends", chunk_ends, METH_VARARGS, "The fewest exact K-chunks over equal groups (greedy), or None."},
    {"finish_pair", finish_pair, METH_VARARGS, "finish for N = hi + lo: round to odd at 53 bits, then to float32."},
    {"sum_blocks", sum_blocks, METH_VARARGS, "The sum rule over each row or column: True where not finite."},
    {"use_simd", use_simd, METH_VARARGS, "Take the widest SIMD loops the processor has (True) or the baselines."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_matmul_native", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__matmul_native(void) {
    choose_gemm(1, 1);
    return PyModule_Create(&MODULE);
}
