/* repro's exp, log, erf, sqrt, GELU, LayerNorm and masked softmax (forward and backward) and the AdamW update on CPU, each one call over a float32 array (gensyn_py/repro/fused.py is the Python face).
 *
 * ops.exp, ops.log and ops.erf define these functions as fixed sequences of IEEE float32 primitives (forty to
 * seventy torch kernels each, a few microseconds of dispatch apiece). This file runs the same sequence element by element in C: every
 * step is one correctly rounded float32 operation, in the same order, with the same float32 constants (passed in
 * from Python, so they are the very values ops.py uses). The build turns off floating-point contraction
 * (-ffp-contract=off): a fused multiply-add would round once where the definition rounds twice. float64 appears
 * only where the definition has it (ldexp_f: an exact product with a power of two, rounded once to float32).
 * tests/unit/test_repro_fused.py compares both with the primitive sequences on random bit patterns and edges.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_sum_rule.h" /* the sum rule over a row, for LayerNorm's means */

#define INLINE static inline __attribute__((always_inline))

INLINE double u64_as_double(uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* ops._horner: p = c[0], then p = p * x + c[j] for each later coefficient, the product and the sum rounded apart. */
INLINE float horner(const float *c, int count, float x) {
    float p = c[0];
    for (int j = 1; j < count; ++j) {
        const float px = p * x;
        p = px + c[j];
    }
    return p;
}

/* Constants, in ops.exp's order: LOG2E, 0.5, LN2_HI, LN2_LO, then EXP_COEF[0..7]. The loops are branch-free so that
 * the compiler can run several elements per instruction (the AVX2 builds below); each lane still performs the same
 * float32 operations in the same order. */
enum { EXP_CONSTS = 12 };

INLINE float exp1(float v, const float *k) {
    const int nan = v != v;
    float xc = nan ? 0.0f : v;
    xc = xc < -104.0f ? -104.0f : (xc > 89.0f ? 89.0f : xc);
    const float t = xc * k[0];
    const float nf = floorf(t + k[1]);
    const float a = nf * k[2];
    const float b = nf * k[3];
    const float r = (xc - a) - b;
    const float p = horner(k + 4, 8, r);
    /* 2**nf exactly (|nf| <= 151), the product exact in float64, one rounding to float32 */
    const int64_t e = (int64_t)(int32_t)nf + 1023;
    const float out = (float)((double)p * u64_as_double((uint64_t)e << 52));
    return nan ? v : out;
}

/* Constants, in ops.erf's order: 1.0, ERF_AS_P, 0.0, ERF_TAYLOR[0..10], ERF_AS[0..4], then exp's twelve. */
enum { ERF_CONSTS = 3 + 11 + 5 + EXP_CONSTS };

INLINE float erf1(float x, const float *k) {
    const float one = k[0], as_p = k[1], zero = k[2];
    const float *taylor = k + 3, *as = k + 14;
    const float a = fabsf(x);
    const float w = x * x;
    const float small = x * horner(taylor, 11, w);
    const float am = a * as_p;
    const float t = one / (one + am);
    const float tp = t * horner(as, 5, t);
    const float ex = exp1(-w, k + 19);
    const float prod = tp * ex;
    float big = one - prod;
    big = x < zero ? -big : big;
    const float y = a < one ? small : big;
    return x != x ? x : y;
}

#define BASELINE_LOOP(name, fn)                                                                          \
    static void name##_baseline(const float *restrict x, float *restrict y, Py_ssize_t n,                \
                                const float *restrict k) {                                               \
        for (Py_ssize_t i = 0; i < n; ++i) y[i] = fn(x[i], k);                                          \
    }
#define AVX2_LOOP(name, fn)                                                                              \
    __attribute__((target("avx2"))) static void name##_avx2(const float *restrict x, float *restrict y,  \
                                                             Py_ssize_t n, const float *restrict k) {     \
        for (Py_ssize_t i = 0; i < n; ++i) y[i] = fn(x[i], k);                                          \
    }

/* primitives.sqrt: the float64 root (correctly rounded here), rounded to float32: the correctly rounded float32
 * root (primitives.sqrt's docstring shows any float64 within four units of the root rounds to it). */
INLINE float sqrt1(float x, const float *k) {
    (void)k;
    return (float)sqrt((double)x);
}
enum { SQRT_CONSTS = 0 };

/* Constants, in ops.log's order: SQRT_HALF, 1.0, LN2_HI, LN2_LO, then LOG_COEF[0..4]. frexpf is a library call, so
 * this loop stays scalar. */
enum { LOG_CONSTS = 9 };

INLINE float log1(float v, const float *k) {
    const float sqrt_half = k[0], one = k[1], ln2_hi = k[2], ln2_lo = k[3];
    float m = v;
    int e = 0;
    if (v != 0.0f && isfinite(v)) m = frexpf(v, &e); /* exact; zeros, infinities and NaN keep m = v, e = 0 */
    float ef = (float)e;                             /* |e| <= 149: exact */
    if (m < sqrt_half) {
        m = m + m;
        ef = ef - one;
    }
    const float f = m - one;
    const float s = f / (m + one);
    const float z = s * s;
    const float lm = s * horner(k + 4, 5, z);
    const float hi = ef * ln2_hi, lo = ef * ln2_lo;
    float r = hi + (lm + lo);
    if (v == 0.0f) r = -INFINITY;
    if (v < 0.0f) r = NAN;
    if (v == INFINITY) r = v;
    if (isnan(v)) r = v;
    return r;
}

BASELINE_LOOP(exp, exp1)
BASELINE_LOOP(log, log1)
BASELINE_LOOP(erf, erf1)
BASELINE_LOOP(sqrt, sqrt1)
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_LOOPS 1
AVX2_LOOP(exp, exp1)
AVX2_LOOP(erf, erf1)
AVX2_LOOP(sqrt, sqrt1)
#endif

/* ops.gelu_parts and ops.gelu_grad: the float32 steps around erf (and exp) in one pass, where the primitives take a
 * kernel each over arrays of megabytes (the 10M LM's 1024 x 1280 activations: 8 ms a layer forward, 7.5 backward).
 * gelu constants: SQRT_HALF, 1.0, 0.5, then erf's; gelu_grad constants: -0.5, INV_SQRT_2PI, then exp's. */
enum { GELU_CONSTS = 3 + ERF_CONSTS, GELU_GRAD_CONSTS = 2 + EXP_CONSTS };

#define GELU_BODY                                                                                        \
    for (Py_ssize_t i = 0; i < n; ++i) {                                                                 \
        const float xi = x[i];                                                                           \
        const float e = erf1(xi * k[0], k + 3);                                                          \
        const float sum = k[1] + e;                                                                      \
        const float c = sum * k[2];                                                                      \
        y[i] = xi * c;                                                                                   \
        cdf[i] = c;                                                                                      \
    }
#define GELU_GRAD_BODY                                                                                   \
    for (Py_ssize_t i = 0; i < n; ++i) {                                                                 \
        const float xi = x[i];                                                                           \
        const float sq = xi * xi;                                                                        \
        const float ex = exp1(sq * k[0], k + 2);                                                         \
        const float pdf = ex * k[1];                                                                     \
        const float xp = xi * pdf;                                                                       \
        const float slope = cdf[i] + xp;                                                                 \
        gx[i] = gy[i] * slope;                                                                           \
    }
#define GELU_ARGS const float *restrict x, float *restrict y, float *restrict cdf, Py_ssize_t n, const float *restrict k
#define GELU_GRAD_ARGS const float *restrict x, const float *restrict cdf, const float *restrict gy,             \
                       float *restrict gx, Py_ssize_t n, const float *restrict k
typedef void (*gelu_fn)(GELU_ARGS);
typedef void (*gelu_grad_fn)(GELU_GRAD_ARGS);
static void gelu_baseline(GELU_ARGS) { GELU_BODY }
static void gelu_grad_baseline(GELU_GRAD_ARGS) { GELU_GRAD_BODY }
#ifdef HAVE_AVX2_LOOPS
__attribute__((target("avx2"))) static void gelu_avx2(GELU_ARGS) { GELU_BODY }
__attribute__((target("avx2"))) static void gelu_grad_avx2(GELU_GRAD_ARGS) { GELU_GRAD_BODY }
#endif
static gelu_fn gelu_loop = gelu_baseline;
static gelu_grad_fn gelu_grad_loop = gelu_grad_baseline;

/* ops.layer_norm_parts and the input gradient of ops.layer_norm_grad over the rows of a row-major r x d float32 x
 * (w, b: d entries), with the row sums of the sum rule (_sum_rule.h) and every other step one float32 operation in
 * the op sequence's order; the root as primitives.sqrt. Where a row sum meets a value that is not finite, the call
 * returns 1 and the caller runs the primitives (which implement the rule's NaN and inf cases). A row's output is
 * the scratch of its sums until it is written.
 * Forward: n = d, mu = sum(x) / n, dv = x - mu, var = sum(dv * dv) / n, s = sqrt(var + eps), xhat = dv / s,
 * y = xhat * w + b. Backward: gh = gy * w, m1 = sum(gh) / n, m2 = sum(gh * xhat) / n, gx = ((gh - m1) - xhat * m2) / s.
 * The gradients of w and b sum over rows, which a data-parallel group splits: the caller keeps those. */
#define LN_FORWARD_ARGS const float *restrict x, const float *restrict w, const float *restrict b, float eps,         \
                        Py_ssize_t r, Py_ssize_t d, float *restrict y, float *restrict xhat, float *restrict s
#define LN_BACKWARD_ARGS const float *restrict xhat, const float *restrict s, const float *restrict w,                \
                         const float *restrict gy, Py_ssize_t r, Py_ssize_t d, float *restrict gx
#define LN_FUNCS(SUFFIX, ATTR)                                                                           \
    ATTR static int ln_forward##SUFFIX(LN_FORWARD_ARGS) {                                               \
        const float n = (float)d;                                                                        \
        for (Py_ssize_t i = 0; i < r; ++i) {                                                             \
            const float *xr = x + i * d;                                                                 \
            float *xh = xhat + i * d, *yr = y + i * d, total, sq;                                        \
            if (sum_rule_row(xr, d, &total)) return 1;                                                   \
            const float mu = total / n;                                                                  \
            for (Py_ssize_t j = 0; j < d; ++j) {                                                         \
                const float dv = xr[j] - mu;                                                             \
                xh[j] = dv;                                                                              \
                yr[j] = dv * dv;                                                                         \
            }                                                                                            \
            if (sum_rule_row(yr, d, &sq)) return 1;                                                      \
            const float var = sq / n, v = var + eps, root = (float)sqrt((double)v);                      \
            s[i] = root;                                                                                 \
            for (Py_ssize_t j = 0; j < d; ++j) {                                                         \
                const float h = xh[j] / root, hw = h * w[j];                                             \
                xh[j] = h;                                                                               \
                yr[j] = hw + b[j];                                                                       \
            }                                                                                            \
        }                                                                                                \
        return 0;                                                                                        \
    }                                                                                                    \
    ATTR static int ln_backward##SUFFIX(LN_BACKWARD_ARGS) {                                             \
        const float n = (float)d;                                                                        \
        for (Py_ssize_t i = 0; i < r; ++i) {                                                             \
            const float *xh = xhat + i * d, *g = gy + i * d;                                             \
            float *out = gx + i * d, s1, s2;                                                             \
            for (Py_ssize_t j = 0; j < d; ++j) out[j] = g[j] * w[j]; /* gh, recomputed below */          \
            if (sum_rule_row(out, d, &s1)) return 1;                                                     \
            for (Py_ssize_t j = 0; j < d; ++j) out[j] = (g[j] * w[j]) * xh[j];                           \
            if (sum_rule_row(out, d, &s2)) return 1;                                                     \
            const float m1 = s1 / n, m2 = s2 / n, si = s[i];                                             \
            for (Py_ssize_t j = 0; j < d; ++j) {                                                         \
                const float a = g[j] * w[j] - m1, xm = xh[j] * m2, c = a - xm;                           \
                out[j] = c / si;                                                                         \
            }                                                                                            \
        }                                                                                                \
        return 0;                                                                                        \
    }
typedef int (*ln_forward_fn)(LN_FORWARD_ARGS);
typedef int (*ln_backward_fn)(LN_BACKWARD_ARGS);
LN_FUNCS(_baseline, )
#ifdef HAVE_AVX2_LOOPS
LN_FUNCS(_avx2, __attribute__((target("avx2"))))
#endif
static ln_forward_fn ln_forward_loop = ln_forward_baseline;
static ln_backward_fn ln_backward_loop = ln_backward_baseline;

/* ops.masked_softmax and ops.softmax_grad over rows of length t: row i of x (rows x t) takes row i % tq of the
 * tq x t mask (uint8: 1 keeps the entry). m = rowmax(where(mask, x, -inf)) + 0, e = where(mask, exp(x - m), +0)
 * (exp as ops.exp: `k`, its constants), p = e / sum(e) by the sum rule; gx = p * (gp - sum(gp * p)). A kept entry
 * that is not finite, or a row with none kept, returns 1: the caller runs the primitives. */
#define SOFTMAX_ARGS const float *restrict x, const uint8_t *restrict mask, Py_ssize_t rows, Py_ssize_t tq,           \
                     Py_ssize_t t, float *restrict p, const float *restrict k
#define SOFTMAX_GRAD_ARGS const float *restrict p, const float *restrict gp, Py_ssize_t rows, Py_ssize_t t,           \
                          float *restrict gx
#define SOFTMAX_FUNCS(SUFFIX, ATTR)                                                                      \
    ATTR static int masked_softmax##SUFFIX(SOFTMAX_ARGS) {                                              \
        for (Py_ssize_t i = 0; i < rows; ++i) {                                                          \
            const float *xr = x + i * t;                                                                 \
            const uint8_t *keep = mask + (i % tq) * t;                                                   \
            float *pr = p + i * t, m = -INFINITY, total;                                                 \
            Py_ssize_t lo = t, hi = 0; /* the kept entries lie in [lo, hi): a causal row's first q + 1 */       \
            for (Py_ssize_t j = 0; j < t; ++j) {                                                         \
                if (!keep[j]) continue;                                                                  \
                if (!isfinite(xr[j])) return 1;                                                          \
                m = xr[j] > m ? xr[j] : m;                                                               \
                lo = j < lo ? j : lo;                                                                    \
                hi = j + 1;                                                                              \
            }                                                                                            \
            if (m == -INFINITY) return 1;                                                                \
            m = m + 0.0f;                                                                                \
            for (Py_ssize_t j = 0; j < lo; ++j) pr[j] = 0.0f;                                            \
            for (Py_ssize_t j = lo; j < hi; ++j) { /* branch-free, so on vectors: masked-out lanes dropped */   \
                const float e = exp1(xr[j] - m, k);                                                      \
                pr[j] = keep[j] ? e : 0.0f;                                                              \
            }                                                                                            \
            for (Py_ssize_t j = hi; j < t; ++j) pr[j] = 0.0f;                                            \
            if (sum_rule_row(pr, t, &total)) return 1;                                                   \
            for (Py_ssize_t j = 0; j < t; ++j) pr[j] = pr[j] / total;                                    \
        }                                                                                                \
        return 0;                                                                                        \
    }                                                                                                    \
    ATTR static int softmax_grad##SUFFIX(SOFTMAX_GRAD_ARGS) {                                           \
        for (Py_ssize_t i = 0; i < rows; ++i) {                                                          \
            const float *pr = p + i * t, *g = gp + i * t;                                                \
            float *out = gx + i * t, dot;                                                                \
            for (Py_ssize_t j = 0; j < t; ++j) out[j] = g[j] * pr[j]; /* the row's scratch until written */ \
            if (sum_rule_row(out, t, &dot)) return 1;                                                    \
            for (Py_ssize_t j = 0; j < t; ++j) {                                                         \
                const float diff = g[j] - dot;                                                           \
                out[j] = pr[j] * diff;                                                                   \
            }                                                                                            \
        }                                                                                                \
        return 0;                                                                                        \
    }
typedef int (*masked_softmax_fn)(SOFTMAX_ARGS);
typedef int (*softmax_grad_fn)(SOFTMAX_GRAD_ARGS);
SOFTMAX_FUNCS(_baseline, )
#ifdef HAVE_AVX2_LOOPS
SOFTMAX_FUNCS(_avx2, __attribute__((target("avx2"))))
#endif
static masked_softmax_fn masked_softmax_loop = masked_softmax_baseline;
static softmax_grad_fn softmax_grad_loop = softmax_grad_baseline;

/* ops.adamw's elementwise update over n contiguous float32 entries, the scalars already rounded to float32 as the
 * primitive sequence rounds them (lr * wd, 1 - beta1, 1 - beta2, 1 - beta1**t, 1 - beta2**t): the same operations
 * in the same order, the root as primitives.sqrt. The outputs are three fresh arrays, or p, m and v themselves. */
typedef struct {
    float lr_wd, beta1, one_minus_beta1, beta2, one_minus_beta2, bias1, bias2, eps, lr;
} adamw_t;

#define ADAMW_BODY(PO, MO, VO)                                                                           \
    for (Py_ssize_t i = 0; i < n; ++i) {                                                                 \
        const float pi = p[i], gi = g[i], mi = m[i], vi = v[i];                                          \
        const float decay = pi * s->lr_wd;                                                               \
        const float pd = pi - decay;                                                                     \
        const float m1 = mi * s->beta1, m2 = gi * s->one_minus_beta1, mn = m1 + m2;                      \
        const float v1 = vi * s->beta2, v2 = gi * s->one_minus_beta2, v3 = v2 * gi, vn = v1 + v3;        \
        const float mhat = mn / s->bias1, vhat = vn / s->bias2;                                          \
        const float root = (float)sqrt((double)vhat);                                                    \
        const float den = root + s->eps;                                                                 \
        const float upd = mhat / den;                                                                    \
        const float step = upd * s->lr;                                                                  \
        PO[i] = pd - step;                                                                               \
        MO[i] = mn;                                                                                      \
        VO[i] = vn;                                                                                      \
    }

/* Into fresh outputs, or in place (p, m and v overwritten; each entry is read before it is written): a step that
 * owns its state writes it where it is, where three fresh arrays of the parameters' size cost a page fault every
 * 4 KiB (10M parameters: 63 ms a step against 12.5 ms in place). */
#define ADAMW_ARGS const float *restrict p, const float *restrict g, const float *restrict m, const float *restrict v, \
                   float *restrict po, float *restrict mo, float *restrict vo, Py_ssize_t n, const adamw_t *s
#define ADAMW_IN_PLACE_ARGS float *restrict p, const float *restrict g, float *restrict m, float *restrict v,         \
                            Py_ssize_t n, const adamw_t *s
typedef void (*adamw_fn)(ADAMW_ARGS);
typedef void (*adamw_in_place_fn)(ADAMW_IN_PLACE_ARGS);

static void adamw_baseline(ADAMW_ARGS) { ADAMW_BODY(po, mo, vo) }
static void adamw_in_place_baseline(ADAMW_IN_PLACE_ARGS) { ADAMW_BODY(p, m, v) }
#ifdef HAVE_AVX2_LOOPS
__attribute__((target("avx2"))) static void adamw_avx2(ADAMW_ARGS) { ADAMW_BODY(po, mo, vo) }
__attribute__((target("avx2"))) static void adamw_in_place_avx2(ADAMW_IN_PLACE_ARGS) { ADAMW_BODY(p, m, v) }
#endif

typedef void (*array_fn)(const float *restrict, float *restrict, Py_ssize_t, const float *restrict);

static array_fn exp_array = exp_baseline, erf_array = erf_baseline, sqrt_array = sqrt_baseline;
static adamw_fn adamw_loop = adamw_baseline;
static adamw_in_place_fn adamw_in_place_loop = adamw_in_place_baseline;

/* The AVX2 loops where `simd` is asked for and the processor has it, else the baseline (the tests run both). */
static void choose_simd(int simd) {
    exp_array = exp_baseline;
    erf_array = erf_baseline;
    sqrt_array = sqrt_baseline;
    adamw_loop = adamw_baseline;
    adamw_in_place_loop = adamw_in_place_baseline;
    gelu_loop = gelu_baseline;
    gelu_grad_loop = gelu_grad_baseline;
    ln_forward_loop = ln_forward_baseline;
    ln_backward_loop = ln_backward_baseline;
    masked_softmax_loop = masked_softmax_baseline;
    softmax_grad_loop = softmax_grad_baseline;
#ifdef HAVE_AVX2_LOOPS
    __builtin_cpu_init();
    if (simd && __builtin_cpu_supports("avx2")) {
        exp_array = exp_avx2;
        erf_array = erf_avx2;
        sqrt_array = sqrt_avx2;
        adamw_loop = adamw_avx2;
        adamw_in_place_loop = adamw_in_place_avx2;
        gelu_loop = gelu_avx2;
        gelu_grad_loop = gelu_grad_avx2;
        ln_forward_loop = ln_forward_avx2;
        ln_backward_loop = ln_backward_avx2;
        masked_softmax_loop = masked_softmax_avx2;
        softmax_grad_loop = softmax_grad_avx2;
    }
#else
    (void)simd;
#endif
}

static PyObject *run(PyObject *args, array_fn f, Py_ssize_t consts) {
    unsigned long long x_ptr, y_ptr, k_ptr;
    Py_ssize_t n, k_len;
    if (!PyArg_ParseTuple(args, "KKnKn", &x_ptr, &y_ptr, &n, &k_ptr, &k_len)) return NULL;
    if (n < 0 || k_len != consts) {
        PyErr_SetString(PyExc_ValueError, "bad length or constant count");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    f((const float *)(uintptr_t)x_ptr, (float *)(uintptr_t)y_ptr, n, (const float *)(uintptr_t)k_ptr);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *exp_(PyObject *self, PyObject *args) { return run(args, exp_array, EXP_CONSTS); }
static PyObject *log_(PyObject *self, PyObject *args) { return run(args, log_baseline, LOG_CONSTS); }
static PyObject *erf_(PyObject *self, PyObject *args) { return run(args, erf_array, ERF_CONSTS); }
static PyObject *sqrt_(PyObject *self, PyObject *args) { return run(args, sqrt_array, SQRT_CONSTS); }

/* adamw(p, g, m, v, p_out, m_out, v_out, n, (lr_wd, beta1, 1 - beta1, beta2, 1 - beta2, 1 - beta1**t, 1 - beta2**t,
 * eps, lr)): the outputs distinct from the inputs, or (p, m, v) again to update in place. */
static PyObject *adamw_(PyObject *self, PyObject *args) {
    unsigned long long p, g, m, v, po, mo, vo;
    Py_ssize_t n;
    adamw_t s;
    if (!PyArg_ParseTuple(args, "KKKKKKKn(fffffffff)", &p, &g, &m, &v, &po, &mo, &vo, &n, &s.lr_wd, &s.beta1,
                          &s.one_minus_beta1, &s.beta2, &s.one_minus_beta2, &s.bias1, &s.bias2, &s.eps, &s.lr))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "bad length");
        return NULL;
    }
    const int in_place = po == p && mo == m && vo == v;
    if (!in_place && (po == p || mo == m || vo == v)) {
        PyErr_SetString(PyExc_ValueError, "adamw: outputs are all fresh or all the inputs");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (in_place)
        adamw_in_place_loop((float *)(uintptr_t)p, (const float *)(uintptr_t)g, (float *)(uintptr_t)m,
                            (float *)(uintptr_t)v, n, &s);
    else
        adamw_loop((const float *)(uintptr_t)p, (const float *)(uintptr_t)g, (const float *)(uintptr_t)m,
                   (const float *)(uintptr_t)v, (float *)(uintptr_t)po, (float *)(uintptr_t)mo, (float *)(uintptr_t)vo,
                   n, &s);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* gelu(x, y, cdf, n, consts, count): ops.gelu_parts over n contiguous float32 values (y and cdf written). */
static PyObject *gelu_(PyObject *self, PyObject *args) {
    unsigned long long x, y, cdf, k;
    Py_ssize_t n, k_len;
    if (!PyArg_ParseTuple(args, "KKKnKn", &x, &y, &cdf, &n, &k, &k_len)) return NULL;
    if (n < 0 || k_len != GELU_CONSTS) {
        PyErr_SetString(PyExc_ValueError, "bad length or constant count");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    gelu_loop((const float *)(uintptr_t)x, (float *)(uintptr_t)y, (float *)(uintptr_t)cdf, n,
              (const float *)(uintptr_t)k);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* gelu_grad(x, cdf, gy, gx, n, consts, count): ops.gelu_grad over n contiguous float32 values. */
static PyObject *gelu_grad_(PyObject *self, PyObject *args) {
    unsigned long long x, cdf, gy, gx, k;
    Py_ssize_t n, k_len;
    if (!PyArg_ParseTuple(args, "KKKKnKn", &x, &cdf, &gy, &gx, &n, &k, &k_len)) return NULL;
    if (n < 0 || k_len != GELU_GRAD_CONSTS) {
        PyErr_SetString(PyExc_ValueError, "bad length or constant count");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    gelu_grad_loop((const float *)(uintptr_t)x, (const float *)(uintptr_t)cdf, (const float *)(uintptr_t)gy,
                   (float *)(uintptr_t)gx, n, (const float *)(uintptr_t)k);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* layer_norm(x, w, b, eps, rows, d, y, xhat, s) -> not finite: ops.layer_norm_parts over the rows (y, xhat: r x d;
 * s: r). */
static PyObject *layer_norm_(PyObject *self, PyObject *args) {
    unsigned long long x, w, b, y, xhat, s;
    float eps;
    Py_ssize_t r, d;
    if (!PyArg_ParseTuple(args, "KKKfnnKKK", &x, &w, &b, &eps, &r, &d, &y, &xhat, &s)) return NULL;
    if (r < 0 || d < 1) {
        PyErr_SetString(PyExc_ValueError, "bad sizes");
        return NULL;
    }
    int special;
    Py_BEGIN_ALLOW_THREADS
    special = ln_forward_loop((const float *)(uintptr_t)x, (const float *)(uintptr_t)w, (const float *)(uintptr_t)b,
                              eps, r, d, (float *)(uintptr_t)y, (float *)(uintptr_t)xhat, (float *)(uintptr_t)s);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(special);
}

/* layer_norm_grad(xhat, s, w, gy, rows, d, gx) -> not finite: the input gradient of ops.layer_norm_grad. */
static PyObject *layer_norm_grad_(PyObject *self, PyObject *args) {
    unsigned long long xhat, s, w, gy, gx;
    Py_ssize_t r, d;
    if (!PyArg_ParseTuple(args, "KKKKnnK", &xhat, &s, &w, &gy, &r, &d, &gx)) return NULL;
    if (r < 0 || d < 1) {
        PyErr_SetString(PyExc_ValueError, "bad sizes");
        return NULL;
    }
    int special;
    Py_BEGIN_ALLOW_THREADS
    special = ln_backward_loop((const float *)(uintptr_t)xhat, (const float *)(uintptr_t)s,
                               (const float *)(uintptr_t)w, (const float *)(uintptr_t)gy, r, d, (float *)(uintptr_t)gx);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(special);
}

/* masked_softmax(x, mask, rows, tq, t, p, consts, count) -> not finite */
static PyObject *masked_softmax_(PyObject *self, PyObject *args) {
    unsigned long long x, mask, p, k;
    Py_ssize_t rows, tq, t, k_len;
    if (!PyArg_ParseTuple(args, "KKnnnKKn", &x, &mask, &rows, &tq, &t, &p, &k, &k_len)) return NULL;
    if (rows < 0 || tq < 1 || t < 1 || k_len != EXP_CONSTS) {
        PyErr_SetString(PyExc_ValueError, "bad sizes or constant count");
        return NULL;
    }
    int special;
    Py_BEGIN_ALLOW_THREADS
    special = masked_softmax_loop((const float *)(uintptr_t)x, (const uint8_t *)(uintptr_t)mask, rows, tq, t,
                                  (float *)(uintptr_t)p, (const float *)(uintptr_t)k);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(special);
}

/* softmax_grad(p, gp, rows, t, gx) -> not finite */
static PyObject *softmax_grad_(PyObject *self, PyObject *args) {
    unsigned long long p, gp, gx;
    Py_ssize_t rows, t;
    if (!PyArg_ParseTuple(args, "KKnnK", &p, &gp, &rows, &t, &gx)) return NULL;
    if (rows < 0 || t < 1) {
        PyErr_SetString(PyExc_ValueError, "bad sizes");
        return NULL;
    }
    int special;
    Py_BEGIN_ALLOW_THREADS
    special = softmax_grad_loop((const float *)(uintptr_t)p, (const float *)(uintptr_t)gp, rows, t,
                                (float *)(uintptr_t)gx);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(special);
}

static PyObject *use_simd(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    choose_simd(on);
    return PyBool_FromLong(exp_array != exp_baseline);
}

static PyMethodDef METHODS[] = {
    {"exp", exp_, METH_VARARGS, "exp(x, y, n, consts, count): ops.exp over n contiguous float32 values."},
    {"log", log_, METH_VARARGS, "log(x, y, n, consts, count): ops.log over n contiguous float32 values."},
    {"erf", erf_, METH_VARARGS, "erf(x, y, n, consts, count): ops.erf over n contiguous float32 values."},
    {"adamw", adamw_, METH_VARARGS, "ops.adamw's update over n contiguous float32 entries (new p, m, v)."},
    {"sqrt", sqrt_, METH_VARARGS, "sqrt(x, y, n, consts, 0): primitives.sqrt over n contiguous float32 values."},
    {"gelu", gelu_, METH_VARARGS, "gelu(x, y, cdf, n, consts, count): ops.gelu_parts (y and cdf) in one pass."},
    {"gelu_grad", gelu_grad_, METH_VARARGS, "gelu_grad(x, cdf, gy, gx, n, consts, count): ops.gelu_grad in one pass."},
    {"layer_norm", layer_norm_, METH_VARARGS, "ops.layer_norm_parts over rows in one pass: True where not finite."},
    {"layer_norm_grad", layer_norm_grad_, METH_VARARGS, "ops.layer_norm_grad's input gradient: True where not finite."},
    {"masked_softmax", masked_softmax_, METH_VARARGS, "ops.masked_softmax over rows: True where not finite."},
    {"softmax_grad", softmax_grad_, METH_VARARGS, "ops.softmax_grad over rows: True where not finite."},
    {"use_simd", use_simd, METH_VARARGS, "Take the AVX2 loops where there are (True) or the baselines."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_fused_native", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__fused_native(void) {
    choose_simd(1);
    return PyModule_Create(&MODULE);
}
