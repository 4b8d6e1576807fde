/* Batched keccak256 Merkle trees (gensyn_py/crypto/native_merkle.py is the Python face of this module).
 *
 * Why native: a tensor's data tree is one keccak per 32-byte chunk plus one per inner node, and a dispute's side
 * hashes tens of thousands of them; called one at a time from Python each hash costs about a microsecond of
 * interpreter overhead around a few hundred nanoseconds of keccak. Here a whole tree is one call.
 *
 * The trees are exactly those of gensyn_py/crypto/merkle.py (OpenZeppelin's MerkleProof: an inner node is the
 * keccak256 of its two children sorted as bytes, an odd last node promoted unchanged), and the chunk leaves
 * those of gensyn_py/proof/tensor_commit.py (keccak256(uint256 chunk index ++ 32-byte chunk)); the tests check
 * both against the Python code on random inputs.
 *
 * Keccak-f[1600] as in FIPS 202 with the original Keccak padding (0x01 ... 0x80) that the EVM's keccak256 uses;
 * every input here is 64 bytes, below the 136-byte rate, so each hash is one absorbed block and one permutation.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static const uint64_t ROUND_CONSTANTS[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL, 0x8000000080008000ULL,
    0x000000000000808bULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008aULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800aULL, 0x800000008000000aULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};
static const unsigned ROTATIONS[24] = {1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 2, 14,
                                       27, 41, 56, 8, 25, 43, 62, 18, 39, 61, 20, 44};
static const unsigned PI_LANES[24] = {10, 7, 11, 17, 18, 3, 5, 16, 8, 21, 24, 4,
                                      15, 23, 19, 13, 12, 2, 20, 14, 22, 9, 6, 1};

/* Keccak-f[1600] over several independent states at once: lane i of state j is s[i][j]. With GCC's vector types
 * one source serves every build below: an AVX-512 one (eight states per 512-bit register, its rotates and
 * three-input logic in one instruction each: about three times the AVX2 one's speed), an AVX2 one (four states per
 * 256-bit register), each chosen at run time where the processor has it, and a baseline one for any processor.
 * The four-state type is kept for AVX2 and the baseline: eight states there spill registers and run slower. */
#define MAX_LANES 8
typedef uint64_t lanes4_t __attribute__((vector_size(8 * 4)));
typedef uint64_t lanes8_t __attribute__((vector_size(8 * 8)));

#define ROTL(x, n) (((x) << (n)) | ((x) >> (64 - (n))))
#define PERMUTE_BODY(T)                                                                                  \
    _Pragma("GCC unroll 24") for (int round = 0; round < 24; ++round) {                                   \
        T c[5], t;                                                                                        \
        _Pragma("GCC unroll 5") for (int x = 0; x < 5; ++x) c[x] =                                        \
            s[x] ^ s[x + 5] ^ s[x + 10] ^ s[x + 15] ^ s[x + 20];                                          \
        _Pragma("GCC unroll 5") for (int x = 0; x < 5; ++x) {                                             \
            t = c[(x + 4) % 5] ^ ROTL(c[(x + 1) % 5], 1);                                                 \
            _Pragma("GCC unroll 5") for (int y = 0; y < 25; y += 5) s[y + x] ^= t;                        \
        }                                                                                                 \
        t = s[1];                                                                                         \
        _Pragma("GCC unroll 24") for (int i = 0; i < 24; ++i) {                                           \
            T next = s[PI_LANES[i]];                                                                      \
            s[PI_LANES[i]] = ROTL(t, ROTATIONS[i]);                                                       \
            t = next;                                                                                     \
        }                                                                                                 \
        _Pragma("GCC unroll 5") for (int y = 0; y < 25; y += 5) {                                         \
            _Pragma("GCC unroll 5") for (int x = 0; x < 5; ++x) c[x] = s[y + x];                          \
            _Pragma("GCC unroll 5") for (int x = 0; x < 5; ++x) s[y + x] =                                \
                c[x] ^ ((~c[(x + 1) % 5]) & c[(x + 2) % 5]);                                              \
        }                                                                                                 \
        s[0] ^= (T){0} + ROUND_CONSTANTS[round];                                                          \
    }

static inline uint64_t load_le(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

static inline void store_le(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* keccak256 of the 64 bytes first[j] ++ second[j] into out[j], for j < count <= the type's lanes (out may alias
 * inputs), with the permutation PERMUTE over states of type T. */
#define BATCH_BODY(T, PERMUTE)                                                                           \
    T s[25];                                                                                              \
    memset(s, 0, sizeof s);                                                                               \
    for (int j = 0; j < count; ++j) {                                                                     \
        for (int i = 0; i < 4; ++i) s[i][j] = load_le(first[j] + 8 * i);                                  \
        for (int i = 0; i < 4; ++i) s[4 + i][j] = load_le(second[j] + 8 * i);                             \
    }                                                                                                     \
    s[8] ^= (T){0} + 0x01ULL;                /* padding starts right after the 64 bytes */                \
    s[16] ^= (T){0} + 0x8000000000000000ULL; /* and ends at the last byte of the 136-byte rate */         \
    PERMUTE(s);                                                                                           \
    for (int j = 0; j < count; ++j)                                                                       \
        for (int i = 0; i < 4; ++i) store_le(out[j] + 8 * i, s[i][j]);

#define BATCH_ARGS const unsigned char *const *first, const unsigned char *const *second, unsigned char *const *out, \
                   int count
typedef void (*batch_fn)(BATCH_ARGS);

static void permute4_baseline(lanes4_t *s) { PERMUTE_BODY(lanes4_t) }
static void batch4_baseline(BATCH_ARGS) { BATCH_BODY(lanes4_t, permute4_baseline) }
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void permute4_avx2(lanes4_t *s) { PERMUTE_BODY(lanes4_t) }
__attribute__((target("avx2"))) static void batch4_avx2(BATCH_ARGS) { BATCH_BODY(lanes4_t, permute4_avx2) }
__attribute__((target("avx512f,avx512vl"))) static void permute8_avx512(lanes8_t *s) { PERMUTE_BODY(lanes8_t) }
__attribute__((target("avx512f,avx512vl"))) static void batch8_avx512(BATCH_ARGS) {
    BATCH_BODY(lanes8_t, permute8_avx512)
}
#endif

/* The batch in use and how many states it takes (`choose_permutation`). */
static batch_fn keccak64_batch = batch4_baseline;
static int lanes = 4;

/* One level up from n nodes at `in` into `out` (which may be `in`); returns the node count of the new level.
 * Each inner node hashes its two children sorted as bytes (OpenZeppelin's commutativeKeccak256), `lanes` at once. */
static Py_ssize_t level_up(const unsigned char *in, Py_ssize_t n, unsigned char *out) {
    Py_ssize_t pairs = n / 2;
    const unsigned char *first[MAX_LANES], *second[MAX_LANES];
    unsigned char *dest[MAX_LANES];
    for (Py_ssize_t k = 0; k < pairs; k += lanes) {
        int count = pairs - k < lanes ? (int)(pairs - k) : lanes;
        for (int j = 0; j < count; ++j) {
            const unsigned char *x = in + 64 * (k + j), *y = x + 32;
            int ordered = memcmp(x, y, 32) < 0;
            first[j] = ordered ? x : y;
            second[j] = ordered ? y : x;
            dest[j] = out + 32 * (k + j);
        }
        keccak64_batch(first, second, dest, count);
    }
    if (n % 2) memmove(out + 32 * pairs, in + 32 * (n - 1), 32);
    return pairs + n % 2;
}

static void chunk_leaves_into(const unsigned char *data, Py_ssize_t n, unsigned long long first, unsigned char *out) {
    unsigned char index[MAX_LANES][32];
    const unsigned char *idx[MAX_LANES], *chunk[MAX_LANES];
    unsigned char *dest[MAX_LANES];
    memset(index, 0, sizeof index);
    for (Py_ssize_t k = 0; k < n; k += lanes) {
        int count = n - k < lanes ? (int)(n - k) : lanes;
        for (int j = 0; j < count; ++j) {
            unsigned long long c = first + (unsigned long long)(k + j);
            for (int i = 0; i < 8; ++i) index[j][31 - i] = (unsigned char)(c >> (8 * i));
            idx[j] = index[j];
            chunk[j] = data + 32 * (k + j);
            dest[j] = out + 32 * (k + j);
        }
        keccak64_batch(idx, chunk, dest, count);
    }
}

static int whole_words(Py_ssize_t len, const char *what) {
    if (len == 0 || len % 32) {
        PyErr_Format(PyExc_ValueError, "%s: a positive multiple of 32 bytes, got %zd", what, len);
        return 0;
    }
    return 1;
}

/* chunk_leaves(data, first) -> bytes: keccak256(uint256(first + k) ++ chunk k) for each 32-byte chunk k. */
static PyObject *chunk_leaves(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned long long first;
    if (!PyArg_ParseTuple(args, "y*K", &data, &first)) return NULL;
    if (!whole_words(data.len, "chunk_leaves")) {
        PyBuffer_Release(&data);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, data.len);
    if (out != NULL) {
        Py_BEGIN_ALLOW_THREADS
        chunk_leaves_into(data.buf, data.len / 32, first, (unsigned char *)PyBytes_AS_STRING(out));
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&data);
    return out;
}

/* levels(leaves) -> list[bytes]: every level of the tree, leaves first, each as its nodes' 32 bytes end to end. */
static PyObject *levels(PyObject *self, PyObject *args) {
    Py_buffer leaves;
    if (!PyArg_ParseTuple(args, "y*", &leaves)) return NULL;
    if (!whole_words(leaves.len, "levels")) {
        PyBuffer_Release(&leaves);
        return NULL;
    }
    PyObject *result = PyList_New(0);
    PyObject *level = PyBytes_FromStringAndSize(leaves.buf, leaves.len);
    PyBuffer_Release(&leaves);
    while (result != NULL && level != NULL) {
        Py_ssize_t n = PyBytes_GET_SIZE(level) / 32;
        if (PyList_Append(result, level) < 0) break;
        if (n == 1) {
            Py_DECREF(level);
            return result;
        }
        PyObject *up = PyBytes_FromStringAndSize(NULL, 32 * (n / 2 + n % 2));
        if (up != NULL) level_up((unsigned char *)PyBytes_AS_STRING(level), n, (unsigned char *)PyBytes_AS_STRING(up));
        Py_DECREF(level);
        level = up;
    }
    Py_XDECREF(level);
    Py_XDECREF(result);
    return NULL;
}

/* Reduce n nodes held in `buf` (overwritten) to the root, written to buf's first 32 bytes. */
static void reduce_to_root(unsigned char *buf, Py_ssize_t n) {
    while (n > 1) n = level_up(buf, n, buf);
}

/* The root over the 32-byte words of `input`: the words are the leaves, or with `chunks` the chunks whose leaves
 * (numbered from `first`) are hashed first. Releases `input`. */
static PyObject *root_of(Py_buffer *input, int chunks, unsigned long long first, const char *what) {
    if (!whole_words(input->len, what)) {
        PyBuffer_Release(input);
        return NULL;
    }
    unsigned char *buf = PyMem_Malloc(input->len);
    if (buf == NULL) {
        PyBuffer_Release(input);
        return PyErr_NoMemory();
    }
    Py_ssize_t n = input->len / 32;
    Py_BEGIN_ALLOW_THREADS
    if (chunks)
        chunk_leaves_into(input->buf, n, first, buf);
    else
        memcpy(buf, input->buf, input->len);
    reduce_to_root(buf, n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(input);
    PyObject *out = PyBytes_FromStringAndSize((char *)buf, 32);
    PyMem_Free(buf);
    return out;
}

/* root(leaves) -> bytes: the tree's root (32 bytes). */
static PyObject *root(PyObject *self, PyObject *args) {
    Py_buffer leaves;
    if (!PyArg_ParseTuple(args, "y*", &leaves)) return NULL;
    return root_of(&leaves, 0, 0, "root");
}

/* chunks_root(data, first) -> bytes: root(chunk_leaves(data, first)) without the leaves leaving C. */
static PyObject *chunks_root(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned long long first;
    if (!PyArg_ParseTuple(args, "y*K", &data, &first)) return NULL;
    return root_of(&data, 1, first, "chunks_root");
}

/* The widest permutation the processor has where `simd` is asked for (AVX-512 only when `widest`), else the
 * baseline; returns its name. */
static const char *choose_permutation(int simd, int widest) {
    keccak64_batch = batch4_baseline;
    lanes = 4;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (simd && widest && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
        keccak64_batch = batch8_avx512;
        lanes = 8;
        return "avx512";
    }
    if (simd && __builtin_cpu_supports("avx2")) {
        keccak64_batch = batch4_avx2;
        return "avx2";
    }
#endif
    return "baseline";
}

/* use_simd(on, widest=True) -> str: choose_permutation(on, widest); the name of the permutation now in use. The
 * tests run every permutation the processor has against the Python trees. */
static PyObject *use_simd(PyObject *self, PyObject *args) {
    int on, widest = 1;
    if (!PyArg_ParseTuple(args, "p|p", &on, &widest)) return NULL;
    return PyUnicode_FromString(choose_permutation(on, widest));
}

static PyMethodDef METHODS[] = {
    {"use_simd", use_simd, METH_VARARGS, "Take the widest SIMD permutation the processor has (True) or the baseline."},
    {"chunk_leaves", chunk_leaves, METH_VARARGS, "keccak256(uint256(first + k) ++ chunk k) per 32-byte chunk."},
    {"levels", levels, METH_VARARGS, "Every level of the commutative keccak tree over 32-byte leaves."},
    {"root", root, METH_VARARGS, "The root of the commutative keccak tree over 32-byte leaves."},
    {"chunks_root", chunks_root, METH_VARARGS, "root(chunk_leaves(data, first))."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_merkle_native", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__merkle_native(void) {
    choose_permutation(1, 1);
    return PyModule_Create(&MODULE);
}
