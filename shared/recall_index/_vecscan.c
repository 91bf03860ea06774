/*
 * The two stages of the in-memory vector search (shared/recall_index/preselect.py), compiled.
 *
 * keep_rows(head, query, out_rows)
 *
 *   head      int16 buffer, rows x stride: every row's quantised first-stage coordinates
 *   query     int16 buffer of length stride: the query's, quantised the same way
 *   out_rows  int64 buffer: receives the len(out_rows) rows of highest score head[i] . query,
 *             ascending; ties at the cut go to the smaller row
 *
 *   The dot products are exact int32 sums when every row's norm times the query's norm stays
 *   below 2^31 (Cauchy-Schwarz then bounds every partial sum too; preselect.py scales both to
 *   a norm of at most 32,767); past that they wrap, never undefined behaviour. The cut is
 *   found with a 2048-bucket histogram over the scores' range, so selecting costs a few linear
 *   passes whatever len(out_rows) is, and only the rows of the cut's bucket are sorted.
 *
 * exact_top(mat, query, rows, out_rows, out_scores) -> written
 *
 *   mat        float32 buffer, n x dim (row-normalised vectors)
 *   query      float32 buffer of length dim
 *   rows       int64 buffer of row positions to score, or None for every row
 *   out_rows   int64 buffer (its length is the top k): the best rows, best first
 *   out_scores float32 buffer of the same length: their scores mat[row] . query
 *
 *   Returns min(k, rows scored). Order: higher score first, then the smaller row; a NaN score
 *   ranks below every number. Each dot product is float32, summed in 8 interleaved partial
 *   sums (element j into sum j mod 8) added pairwise at the end: a fixed order, so the result
 *   does not depend on the compiler or the machine (no fused multiply-add: -ffp-contract=off).
 *
 * Both release the GIL while scanning and raise ValueError for buffers of the wrong item size
 * or length, or a row out of range. On x86-64 with GCC or Clang, AVX2 versions of the dot
 * products are used when the CPU has it (checked at import; module attribute avx2; the
 * environment variable MNEMOGATE_VECSCAN_NO_AVX2 turns them off): the same results, bit for
 * bit. Elsewhere SSE2, else plain C.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#define BUCKETS 2048
#define LANES 16 /* rows of the int16 head are padded to a multiple of this (preselect.LANES) */
#define PREFETCH 8 /* rows ahead of the exact stage's scan (8: ~20 % less CPU than 4 or 16) */

/* ---- dot products ----------------------------------------------------------------------- */

static int wide = 0; /* AVX2 present (checked at import); the results do not depend on it */

static inline int32_t dot16(const int16_t *a, const int16_t *b, Py_ssize_t n) {
    uint32_t sum = 0; /* wraps like the SIMD additions (no signed overflow) */
    for (Py_ssize_t j = 0; j < n; j++) sum += (uint32_t)((int32_t)a[j] * (int32_t)b[j]);
    return (int32_t)sum;
}

#if defined(__SSE2__)
#define LOAD16(p) _mm_loadu_si128((const __m128i *)(p))
/* The exact int32 dot products of 4 consecutive rows with q (stride a multiple of 8). */
static void dot16x4(const int16_t *rows, const int16_t *q, Py_ssize_t stride, int32_t *out) {
    const int16_t *r0 = rows, *r1 = rows + stride, *r2 = rows + 2 * stride, *r3 = rows + 3 * stride;
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (Py_ssize_t j = 0; j < stride; j += 8) {
        __m128i y = LOAD16(q + j);
        a0 = _mm_add_epi32(a0, _mm_madd_epi16(LOAD16(r0 + j), y));
        a1 = _mm_add_epi32(a1, _mm_madd_epi16(LOAD16(r1 + j), y));
        a2 = _mm_add_epi32(a2, _mm_madd_epi16(LOAD16(r2 + j), y));
        a3 = _mm_add_epi32(a3, _mm_madd_epi16(LOAD16(r3 + j), y));
    }
    /* transpose-and-add: lane k of the result is the sum of a_k's lanes */
    __m128i s01 = _mm_add_epi32(_mm_unpacklo_epi32(a0, a1), _mm_unpackhi_epi32(a0, a1));
    __m128i s23 = _mm_add_epi32(_mm_unpacklo_epi32(a2, a3), _mm_unpackhi_epi32(a2, a3));
    __m128i sum = _mm_add_epi32(_mm_unpacklo_epi64(s01, s23), _mm_unpackhi_epi64(s01, s23));
    _mm_storeu_si128((__m128i *)out, sum);
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_AVX2 1
#define LOAD16W(p) _mm256_loadu_si256((const __m256i *)(p))
/* dot16x4 16 coordinates at a time (stride a multiple of 16): the same exact sums. */
__attribute__((target("avx2"))) static void dot16x4_avx2(const int16_t *rows, const int16_t *q,
                                                        Py_ssize_t stride, int32_t *out) {
    const int16_t *r0 = rows, *r1 = rows + stride, *r2 = rows + 2 * stride, *r3 = rows + 3 * stride;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (Py_ssize_t j = 0; j < stride; j += 16) {
        __m256i y = LOAD16W(q + j);
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(LOAD16W(r0 + j), y));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(LOAD16W(r1 + j), y));
        a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(LOAD16W(r2 + j), y));
        a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(LOAD16W(r3 + j), y));
    }
    __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(a0, a1), _mm256_unpackhi_epi32(a0, a1));
    __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(a2, a3), _mm256_unpackhi_epi32(a2, a3));
    __m256i sum = _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
    __m128i both = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    _mm_storeu_si128((__m128i *)out, both);
}
#endif

/* The 8 partial sums of a . b: element j goes into sum j mod 8, in order of j. */
static inline void partial32(const float *a, const float *b, Py_ssize_t n, float *s) {
    Py_ssize_t j = 0;
    for (int l = 0; l < 8; l++) s[l] = 0.0f;
#if defined(__SSE2__)
    __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
    for (; j + 8 <= n; j += 8) {
        lo = _mm_add_ps(lo, _mm_mul_ps(_mm_loadu_ps(a + j), _mm_loadu_ps(b + j)));
        hi = _mm_add_ps(hi, _mm_mul_ps(_mm_loadu_ps(a + j + 4), _mm_loadu_ps(b + j + 4)));
    }
    _mm_storeu_ps(s, lo);
    _mm_storeu_ps(s + 4, hi);
#endif
    for (int l = 0; j < n; j++, l = (l + 1) % 8) s[l] += a[j] * b[j];
}

/* The dot product from its 8 partial sums, added pairwise. */
static inline float combine(const float *s) {
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

/* Rows r[0..4) . q, each exactly as partial32 + combine, the 4 computed side by side. */
static void dot32x4(const float *const *r, const float *q, Py_ssize_t n, float *out) {
    float s[4][8];
#if defined(__SSE2__)
    __m128 l0 = _mm_setzero_ps(), l1 = l0, l2 = l0, l3 = l0, h0 = l0, h1 = l0, h2 = l0, h3 = l0;
    Py_ssize_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m128 ql = _mm_loadu_ps(q + j), qh = _mm_loadu_ps(q + j + 4);
        l0 = _mm_add_ps(l0, _mm_mul_ps(_mm_loadu_ps(r[0] + j), ql));
        h0 = _mm_add_ps(h0, _mm_mul_ps(_mm_loadu_ps(r[0] + j + 4), qh));
        l1 = _mm_add_ps(l1, _mm_mul_ps(_mm_loadu_ps(r[1] + j), ql));
        h1 = _mm_add_ps(h1, _mm_mul_ps(_mm_loadu_ps(r[1] + j + 4), qh));
        l2 = _mm_add_ps(l2, _mm_mul_ps(_mm_loadu_ps(r[2] + j), ql));
        h2 = _mm_add_ps(h2, _mm_mul_ps(_mm_loadu_ps(r[2] + j + 4), qh));
        l3 = _mm_add_ps(l3, _mm_mul_ps(_mm_loadu_ps(r[3] + j), ql));
        h3 = _mm_add_ps(h3, _mm_mul_ps(_mm_loadu_ps(r[3] + j + 4), qh));
    }
    _mm_storeu_ps(s[0], l0);
    _mm_storeu_ps(s[0] + 4, h0);
    _mm_storeu_ps(s[1], l1);
    _mm_storeu_ps(s[1] + 4, h1);
    _mm_storeu_ps(s[2], l2);
    _mm_storeu_ps(s[2] + 4, h2);
    _mm_storeu_ps(s[3], l3);
    _mm_storeu_ps(s[3] + 4, h3);
    for (int k = 0; k < 4; k++)
        for (Py_ssize_t t = j, l = 0; t < n; t++, l = (l + 1) % 8) s[k][l] += r[k][t] * q[t];
#else
    for (int k = 0; k < 4; k++) partial32(r[k], q, n, s[k]);
#endif
    for (int k = 0; k < 4; k++) out[k] = combine(s[k]);
}

#if defined(HAVE_AVX2)
/* dot32x4 8 coordinates per register: lane l still sums the elements j with j mod 8 = l, in
 * order, so the results are bit-identical to the SSE2 and scalar paths (no FMA). */
__attribute__((target("avx2"))) static void dot32x4_avx2(const float *const *r, const float *q,
                                                        Py_ssize_t n, float *out) {
    float s[4][8];
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    Py_ssize_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 y = _mm256_loadu_ps(q + j);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(r[0] + j), y));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(r[1] + j), y));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(r[2] + j), y));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(r[3] + j), y));
    }
    _mm256_storeu_ps(s[0], a0);
    _mm256_storeu_ps(s[1], a1);
    _mm256_storeu_ps(s[2], a2);
    _mm256_storeu_ps(s[3], a3);
    for (int k = 0; k < 4; k++)
        for (Py_ssize_t t = j, l = 0; t < n; t++, l = (l + 1) % 8) s[k][l] += r[k][t] * q[t];
    for (int k = 0; k < 4; k++) out[k] = combine(s[k]);
}
#endif

/* ---- first stage ------------------------------------------------------------------------ */

static int get(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable) {
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS
                                               : PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize || view->len % itemsize) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "buffer of item size %zd expected", itemsize);
        return -1;
    }
    return 0;
}

typedef struct {
    int32_t score;
    int64_t row;
} Cand;

/* qsort order: higher score first, then the smaller row */
static int cand_order(const void *pa, const void *pb) {
    const Cand *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->row < b->row ? -1 : (a->row > b->row);
}

/* qsort order: the smaller row first */
static int cand_row_order(const void *pa, const void *pb) {
    const Cand *a = pa, *b = pb;
    return a->row < b->row ? -1 : (a->row > b->row);
}

/* Score 4 rows from i on into scores[i..i+4). */
static inline void score4(const int16_t *head, const int16_t *q, Py_ssize_t stride, Py_ssize_t i,
                          int32_t *scores) {
#if defined(HAVE_AVX2)
    if (wide && stride % 16 == 0)
        dot16x4_avx2(head + i * stride, q, stride, scores + i);
    else
#endif
#if defined(__SSE2__)
        if (stride % 8 == 0)
        dot16x4(head + i * stride, q, stride, scores + i);
    else
#endif
        for (int k = 0; k < 4; k++) scores[i + k] = dot16(head + (i + k) * stride, q, stride);
}

/* The keep (< n) best rows into out (ascending); 0, or -1 when out of memory. */
static int select_rows(const int16_t *head, const int16_t *q, Py_ssize_t n, Py_ssize_t stride,
                       Py_ssize_t keep, int64_t *out) {
    int32_t *scores = malloc((size_t)n * sizeof(int32_t));
    if (scores == NULL) return -1;
    Py_ssize_t i = 0;
    int32_t lo4[4] = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
    int32_t hi4[4] = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
    for (; i + 4 <= n; i += 4) {
        score4(head, q, stride, i, scores);
        for (int k = 0; k < 4; k++) { /* 4 independent chains */
            lo4[k] = scores[i + k] < lo4[k] ? scores[i + k] : lo4[k];
            hi4[k] = scores[i + k] > hi4[k] ? scores[i + k] : hi4[k];
        }
    }
    for (; i < n; i++) {
        scores[i] = dot16(head + i * stride, q, stride);
        lo4[0] = scores[i] < lo4[0] ? scores[i] : lo4[0];
        hi4[0] = scores[i] > hi4[0] ? scores[i] : hi4[0];
    }
    int64_t lo = lo4[0], hi = hi4[0];
    for (int k = 1; k < 4; k++) {
        lo = lo4[k] < lo ? lo4[k] : lo;
        hi = hi4[k] > hi ? hi4[k] : hi;
    }
    /* the scores' range in BUCKETS buckets of 2^shift; row i counted in hist[i % 4] (4
     * histograms: rows of one bucket in a row do not wait for each other's count) */
    int shift = 0;
    while ((hi - lo) >> shift >= BUCKETS) shift++;
    uint32_t hist[4][BUCKETS]; /* 32 KB */
    memset(hist, 0, sizeof hist);
    for (i = 0; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) hist[k][(scores[i + k] - lo) >> shift]++;
    for (; i < n; i++) hist[0][(scores[i] - lo) >> shift]++;
    for (int b = 0; b < BUCKETS; b++) hist[0][b] += hist[1][b] + hist[2][b] + hist[3][b];
    /* the cut: the bucket where the count from the top reaches keep */
    Py_ssize_t above = 0;
    int cut = BUCKETS - 1;
    while (above + (Py_ssize_t)hist[0][cut] < keep) above += hist[0][cut--];
    Cand *cand = malloc((size_t)hist[0][cut] * sizeof(Cand) + 1);
    if (cand == NULL) {
        free(scores);
        return -1;
    }
    /* rows above the cut's bucket are kept; of those in it, the best keep - above */
    int64_t from = lo + ((int64_t)cut << shift), over = lo + ((int64_t)(cut + 1) << shift);
    Py_ssize_t kept = 0, at_cut = 0;
    for (i = 0; i < n; i++) {
        int64_t s = scores[i];
        out[kept] = i; /* written for every row, counted only when kept: no branch */
        kept += s >= over;
        if (s >= from && s < over) {
            cand[at_cut].score = (int32_t)s;
            cand[at_cut++].row = i;
        }
    }
    Py_ssize_t wanted = keep - above;
    if (wanted < at_cut) { /* the best of the cut bucket, back in row order */
        qsort(cand, (size_t)at_cut, sizeof(Cand), cand_order);
        qsort(cand, (size_t)wanted, sizeof(Cand), cand_row_order);
    }
    /* merge the two ascending lists, from the end: out[0..kept) and cand[0..wanted) */
    Py_ssize_t x = kept - 1, c = wanted - 1;
    for (Py_ssize_t w = keep - 1; c >= 0; w--)
        out[w] = (x >= 0 && out[x] > cand[c].row) ? out[x--] : cand[c--].row;
    free(scores);
    free(cand);
    return 0;
}

static PyObject *keep_rows(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *head_obj, *q_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO", &head_obj, &q_obj, &out_obj)) return NULL;
    Py_buffer head = {0}, q = {0}, out = {0};
    PyObject *result = NULL;
    if (get(head_obj, &head, 2, 0) < 0) return NULL;
    if (get(q_obj, &q, 2, 0) < 0) goto release_head;
    if (get(out_obj, &out, 8, 1) < 0) goto release_q;
    Py_ssize_t stride = q.len / 2, keep = out.len / 8;
    Py_ssize_t n = stride > 0 ? head.len / 2 / stride : 0;
    if (stride == 0 || head.len / 2 != n * stride) {
        PyErr_SetString(PyExc_ValueError, "head must hold whole rows of the query's length");
        goto release;
    }
    if (keep < 1 || keep > n) {
        PyErr_SetString(PyExc_ValueError, "out_rows must hold 1..rows rows");
        goto release;
    }
    int failed = 0;
    if (keep == n) {
        for (Py_ssize_t i = 0; i < n; i++) ((int64_t *)out.buf)[i] = i;
    } else {
        Py_BEGIN_ALLOW_THREADS failed = select_rows(head.buf, q.buf, n, stride, keep, out.buf);
        Py_END_ALLOW_THREADS
    }
    if (failed) {
        PyErr_NoMemory();
        goto release;
    }
    result = Py_None;
    Py_INCREF(result);
release:
    PyBuffer_Release(&out);
release_q:
    PyBuffer_Release(&q);
release_head:
    PyBuffer_Release(&head);
    return result;
}

/* ---- exact stage ---------------------------------------------------------------------- */

typedef struct {
    float key; /* the score, NaN as -inf */
    float score;
    int64_t row;
} Hit;

/* 1 when a ranks below b: lower score, or the same score and a larger row. */
static inline int worse(const Hit *a, const Hit *b) {
    return a->key < b->key || (a->key == b->key && a->row > b->row);
}

static void sift_down(Hit *heap, Py_ssize_t size, Py_ssize_t i) {
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < size && worse(&heap[l], &heap[m])) m = l;
        if (r < size && worse(&heap[r], &heap[m])) m = r;
        if (m == i) return;
        Hit t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static void sift_up(Hit *heap, Py_ssize_t i) {
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!worse(&heap[i], &heap[p])) return;
        Hit t = heap[i];
        heap[i] = heap[p];
        heap[p] = t;
        i = p;
    }
}

static inline void offer(Hit *heap, Py_ssize_t *size, Py_ssize_t k, float s, int64_t row) {
    Hit h = {isnan(s) ? -INFINITY : s, s, row};
    if (*size < k) {
        heap[*size] = h;
        sift_up(heap, (*size)++);
    } else if (worse(&heap[0], &h)) {
        heap[0] = h;
        sift_down(heap, *size, 0);
    }
}

/* Score the rows (all when rows is NULL), keep the best k best first; returns how many. */
static Py_ssize_t top(const float *mat, const float *q, Py_ssize_t dim, const int64_t *rows,
                      Py_ssize_t count, Hit *heap, Py_ssize_t k) {
    Py_ssize_t size = 0, i = 0;
    for (; i + 4 <= count; i += 4) {
        const float *r[4];
        float s[4];
        for (int b = 0; b < 4; b++) r[b] = mat + (rows != NULL ? rows[i + b] : i + b) * dim;
#if defined(__GNUC__)
        /* scattered rows: fetch every cache line of the rows PREFETCH ahead (the hardware
         * prefetcher only follows each row once it is being read) */
        if (rows != NULL && i + PREFETCH + 4 <= count)
            for (int b = 0; b < 4; b++)
                for (Py_ssize_t o = 0; o < dim * 4; o += 64)
                    __builtin_prefetch((const char *)(mat + rows[i + PREFETCH + b] * dim) + o);
#endif
#if defined(HAVE_AVX2)
        if (wide)
            dot32x4_avx2(r, q, dim, s);
        else
#endif
            dot32x4(r, q, dim, s);
        for (int b = 0; b < 4; b++) offer(heap, &size, k, s[b], rows != NULL ? rows[i + b] : i + b);
    }
    for (; i < count; i++) {
        int64_t row = rows != NULL ? rows[i] : i;
        float s[8];
        partial32(mat + row * dim, q, dim, s);
        offer(heap, &size, k, combine(s), row);
    }
    for (Py_ssize_t end = size - 1; end > 0; end--) { /* heap sort: ends best first */
        Hit t = heap[0];
        heap[0] = heap[end];
        heap[end] = t;
        sift_down(heap, end, 0);
    }
    return size;
}

static PyObject *exact_top(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *mat_obj, *q_obj, *rows_obj, *idx_obj, *scores_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &mat_obj, &q_obj, &rows_obj, &idx_obj, &scores_obj))
        return NULL;
    Py_buffer mat = {0}, q = {0}, rows = {0}, idx = {0}, scores = {0};
    PyObject *result = NULL;
    int have_rows = rows_obj != Py_None;
    if (get(mat_obj, &mat, 4, 0) < 0) return NULL;
    if (get(q_obj, &q, 4, 0) < 0) goto release_mat;
    if (have_rows && get(rows_obj, &rows, 8, 0) < 0) goto release_q;
    if (get(idx_obj, &idx, 8, 1) < 0) goto release_rows;
    if (get(scores_obj, &scores, 4, 1) < 0) goto release_idx;
    Py_ssize_t dim = q.len / 4, k = idx.len / 8;
    Py_ssize_t n = dim > 0 ? mat.len / 4 / dim : 0;
    Py_ssize_t count = have_rows ? rows.len / 8 : n;
    if (dim == 0 || mat.len / 4 != n * dim) {
        PyErr_SetString(PyExc_ValueError, "mat must hold whole rows of the query's length");
        goto release;
    }
    if (scores.len / 4 != k) {
        PyErr_SetString(PyExc_ValueError, "out_rows and out_scores differ in length");
        goto release;
    }
    const int64_t *r = have_rows ? rows.buf : NULL;
    for (Py_ssize_t i = 0; r != NULL && i < count; i++) {
        if (r[i] < 0 || r[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "row out of range");
            goto release;
        }
    }
    Hit *heap = PyMem_Malloc((size_t)(k > 0 ? k : 1) * sizeof(Hit));
    if (heap == NULL) {
        PyErr_NoMemory();
        goto release;
    }
    Py_ssize_t written;
    Py_BEGIN_ALLOW_THREADS written = top(mat.buf, q.buf, dim, r, count, heap, k);
    Py_END_ALLOW_THREADS int64_t *out_rows = idx.buf;
    float *out_scores = scores.buf;
    for (Py_ssize_t i = 0; i < written; i++) {
        out_rows[i] = heap[i].row;
        out_scores[i] = heap[i].score;
    }
    PyMem_Free(heap);
    result = PyLong_FromSsize_t(written);
release:
    PyBuffer_Release(&scores);
release_idx:
    PyBuffer_Release(&idx);
release_rows:
    if (have_rows) PyBuffer_Release(&rows);
release_q:
    PyBuffer_Release(&q);
release_mat:
    PyBuffer_Release(&mat);
    return result;
}

static PyMethodDef methods[] = {
    {"keep_rows", keep_rows, METH_VARARGS,
     "keep_rows(head, query, out_rows): the rows of highest int16 first-stage score, ascending"},
    {"exact_top", exact_top, METH_VARARGS,
     "exact_top(mat, query, rows, out_rows, out_scores) -> written: the best float32 cosines"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_vecscan", "The two stages of the in-memory vector search.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__vecscan(void) {
#if defined(HAVE_AVX2)
    __builtin_cpu_init();
    wide = __builtin_cpu_supports("avx2") && getenv("MNEMOGATE_VECSCAN_NO_AVX2") == NULL;
#endif
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "avx2", wide) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
