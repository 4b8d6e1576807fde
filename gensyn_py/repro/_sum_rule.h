/* The repro sum rule over one row of float32 (gensyn_py/repro/matmul.py's repro_sum), shared by the C modules that
 * need it: _matmul_native.c (the sum rule's own call) and _fused_native.c (LayerNorm's row sums).
 *
 * Every finite entry of the row is rounded to a multiple of the row's block unit u = 2**(E_block - 150), ties to
 * even (E_x = max(biased exponent field, 1), E_block the largest E_x of the row: what the matmul rule's alignment
 * does), and added as it is. The sum is the same number as the aligned integers' sum times u, exact in float64: at
 * most 2**14 terms of at most 2**24 u each make a multiple of u below 2**38 u, and u >= 2**-149. One conversion to
 * float32 then rounds it once; a zero sum gives +0. */
#ifndef GENSYN_SUM_RULE_H
#define GENSYN_SUM_RULE_H

#include <stdint.h>
#include <string.h>

static inline int field_of(uint32_t bits) { return (int)((bits >> 23) & 0xFF); }

/* c = 1.5 * 2**52 * u for the block unit u = 2**(top - 150): fl(x + c) - c is x rounded to a multiple of u, ties
 * to even (|x| < 2**24 u puts x + c in [2**52 u, 2**53 u), where the float64 spacing is u, and c / u is even);
 * times 1 / u = 2**(150 - top) it is the aligned integer. */
static inline double pow2(int e) {
    uint64_t bits = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* out = the sum rule over the k float32 values of row; returns 1 (out unset) where one is not finite. Inlined into
 * each caller, so it runs on the caller's vector width. */
static inline __attribute__((always_inline)) int sum_rule_row(const float *row, Py_ssize_t k, float *out) {
    int top = 1;
    for (Py_ssize_t p = 0; p < k; ++p) {
        uint32_t bits;
        memcpy(&bits, row + p, sizeof bits);
        const int e = field_of(bits);
        top = e > top ? e : top;
    }
    if (top == 0xFF) return 1;
    const double c = 1.5 * pow2(top - 98);
    double total = 0.0;
#pragma omp simd reduction(+ : total)
    for (Py_ssize_t p = 0; p < k; ++p) total += ((double)row[p] + c) - c;
    *out = (float)(total + 0.0); /* + 0.0: a zero sum is +0 */
    return 0;
}

#endif
