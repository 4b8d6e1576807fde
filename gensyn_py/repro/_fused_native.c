/* repro's exp and log on CPU, each one call over a float32 array (gensyn_py/repro/fused.py is the Python face).
 *
 * ops.exp and ops.log define these functions as fixed sequences of IEEE float32 primitives (about forty torch kernels
 * each, a few microseconds of dispatch apiece). This file runs the same sequence element by element in C: every
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

static inline double pow2(int e) {
    uint64_t bits = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Constants, in ops.exp's order: LOG2E, 0.5, LN2_HI, LN2_LO, then EXP_COEF[0..7]. */
enum { EXP_CONSTS = 12 };

static void exp_array(const float *x, float *y, Py_ssize_t n, const float *k) {
    const float log2e = k[0], half = k[1], ln2_hi = k[2], ln2_lo = k[3];
    const float *coef = k + 4;
    for (Py_ssize_t i = 0; i < n; ++i) {
        const float v = x[i];
        if (isnan(v)) {
            y[i] = v;
            continue;
        }
        const float xc = v < -104.0f ? -104.0f : (v > 89.0f ? 89.0f : v);
        const float t = xc * log2e;
        const float nf = floorf(t + half);
        const float a = nf * ln2_hi;
        const float b = nf * ln2_lo;
        const float r = (xc - a) - b;
        float p = coef[0];
        for (int j = 1; j < 8; ++j) {
            const float pr = p * r;
            p = pr + coef[j];
        }
        y[i] = (float)((double)p * pow2((int)nf)); /* |nf| <= 151: an exact product, one rounding */
    }
}

/* Constants, in ops.log's order: SQRT_HALF, 1.0, LN2_HI, LN2_LO, then LOG_COEF[0..4]. */
enum { LOG_CONSTS = 9 };

static void log_array(const float *x, float *y, Py_ssize_t n, const float *k) {
    const float sqrt_half = k[0], one = k[1], ln2_hi = k[2], ln2_lo = k[3];
    const float *coef = k + 4;
    for (Py_ssize_t i = 0; i < n; ++i) {
        const float v = x[i];
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
        float p = coef[0];
        for (int j = 1; j < 5; ++j) {
            const float pz = p * z;
            p = pz + coef[j];
        }
        const float lm = s * p;
        const float hi = ef * ln2_hi, lo = ef * ln2_lo;
        float r = hi + (lm + lo);
        if (v == 0.0f) r = -INFINITY;
        if (v < 0.0f) r = NAN;
        if (v == INFINITY) r = v;
        if (isnan(v)) r = v;
        y[i] = r;
    }
}

static PyObject *run(PyObject *args, void (*f)(const float *, float *, Py_ssize_t, const float *), Py_ssize_t consts) {
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
static PyObject *log_(PyObject *self, PyObject *args) { return run(args, log_array, LOG_CONSTS); }

static PyMethodDef METHODS[] = {
    {"exp", exp_, METH_VARARGS, "exp(x, y, n, consts, count): ops.exp over n contiguous float32 values."},
    {"log", log_, METH_VARARGS, "log(x, y, n, consts, count): ops.log over n contiguous float32 values."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_fused_native", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__fused_native(void) { return PyModule_Create(&MODULE); }
