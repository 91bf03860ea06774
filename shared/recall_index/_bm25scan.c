/*
 * The exhaustive BM25 scorer of the in-memory keyword index, in one pass over the postings.
 *
 * scan(docs, weights, idfs, need, acc, count, touched, out_idx, out_scores) -> (returned, matched)
 *
 *   docs      sequence of int32 buffers: each query term's ascending document positions
 *   weights   sequence of float32 buffers: each term's tf factors, aligned with its positions
 *   idfs      float32 buffer: each term's IDF, in term order
 *   need      documents must hold at least this many of the terms (1..255)
 *   acc       float64 scratch, one per document, all 0 (0 again on return)
 *   count     uint8 scratch, one per document, all 0 (0 again on return)
 *   touched   int32 scratch, one per document
 *   out_idx   int64 buffer: the best documents' positions, best first (its length is the top k)
 *   out_scores float64 buffer of the same length: their scores
 *
 * Returns how many documents were written (min(k, matched)) and how many matched.
 *
 * Scores are bit-identical to the numpy scorer (shared/recall_index/topk.py, dense_top): each
 * product idf * w is a float32 multiplication, and a document's products are added into a
 * float64 accumulator in term order, as numpy.bincount adds its weights. Ties are broken by the
 * smaller position. The GIL is released while scoring. Raises ValueError for a position outside
 * the scratch, mismatched lengths, or buffers of the wrong item size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    double score;
    int64_t pos;
} Hit;

/* 1 when a ranks below b: lower score, or the same score and a larger position. */
static inline int worse(const Hit *a, const Hit *b) {
    return a->score < b->score || (a->score == b->score && a->pos > b->pos);
}

/* Restore the min-heap (worst at the root) below slot i. */
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

/* Score every posting, keep the best k; 0 on success, -1 for a position out of range. */
static int score(Py_ssize_t terms, Py_buffer *docs, Py_buffer *ws, const float *idfs, int need,
                 double *acc, uint8_t *count, int32_t *touched, Py_ssize_t n, Hit *heap,
                 Py_ssize_t k, Py_ssize_t *returned, Py_ssize_t *matched) {
    Py_ssize_t seen = 0, size = 0, found = 0;
    int bad = 0;
    for (Py_ssize_t t = 0; t < terms && !bad; t++) {
        const int32_t *d = (const int32_t *)docs[t].buf;
        const float *w = (const float *)ws[t].buf;
        Py_ssize_t len = docs[t].len / 4;
        float idf = idfs[t];
        for (Py_ssize_t j = 0; j < len; j++) {
            int32_t pos = d[j];
            if (pos < 0 || pos >= n) {
                bad = 1;
                break;
            }
            float product = idf * w[j];
            acc[pos] += (double)product;
            if (count[pos]++ == 0) touched[seen++] = pos;
        }
    }
    for (Py_ssize_t i = 0; i < seen; i++) {
        int32_t pos = touched[i];
        if (!bad && count[pos] >= need && k > 0) {
            Hit h = {acc[pos], pos};
            found++;
            if (size < k) {
                heap[size] = h;
                sift_up(heap, size++);
            } else if (worse(&heap[0], &h)) {
                heap[0] = h;
                sift_down(heap, size, 0);
            }
        } else if (!bad && count[pos] >= need) {
            found++;
        }
        acc[pos] = 0.0;
        count[pos] = 0;
    }
    /* heap sort: the worst goes to the end, so the array ends best first */
    for (Py_ssize_t end = size - 1; end > 0; end--) {
        Hit t = heap[0];
        heap[0] = heap[end];
        heap[end] = t;
        sift_down(heap, end, 0);
    }
    *returned = size;
    *matched = found;
    return bad ? -1 : 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *docs_obj, *ws_obj, *idfs_obj, *acc_obj, *count_obj, *touched_obj, *idx_obj,
        *scores_obj;
    int need;
    if (!PyArg_ParseTuple(args, "OOOiOOOOO", &docs_obj, &ws_obj, &idfs_obj, &need, &acc_obj,
                          &count_obj, &touched_obj, &idx_obj, &scores_obj))
        return NULL;
    if (need < 1 || need > 255) {
        PyErr_SetString(PyExc_ValueError, "need must be in 1..255");
        return NULL;
    }
    PyObject *docs_seq = PySequence_Fast(docs_obj, "docs must be a sequence");
    if (docs_seq == NULL) return NULL;
    PyObject *ws_seq = PySequence_Fast(ws_obj, "weights must be a sequence");
    if (ws_seq == NULL) {
        Py_DECREF(docs_seq);
        return NULL;
    }
    Py_ssize_t terms = PySequence_Fast_GET_SIZE(docs_seq), got_docs = 0, got_ws = 0;
    Py_buffer *docs = PyMem_Calloc(terms + 1, sizeof(Py_buffer));
    Py_buffer *ws = PyMem_Calloc(terms + 1, sizeof(Py_buffer));
    Py_buffer idfs = {0}, acc = {0}, count = {0}, touched = {0}, idx = {0}, scores = {0};
    int held = 0; /* buffers of the fixed arguments acquired so far */
    Hit *heap = NULL;
    PyObject *result = NULL;
    if (docs == NULL || ws == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (PySequence_Fast_GET_SIZE(ws_seq) != terms || terms > 255) {
        PyErr_SetString(PyExc_ValueError, "one weights buffer per docs buffer, at most 255");
        goto done;
    }
    for (; got_docs < terms; got_docs++)
        if (get(PySequence_Fast_GET_ITEM(docs_seq, got_docs), &docs[got_docs], 4, 0) < 0) goto done;
    for (; got_ws < terms; got_ws++) {
        if (get(PySequence_Fast_GET_ITEM(ws_seq, got_ws), &ws[got_ws], 4, 0) < 0) goto done;
        if (ws[got_ws].len != docs[got_ws].len) {
            got_ws++;
            PyErr_SetString(PyExc_ValueError, "a term's positions and weights differ in length");
            goto done;
        }
    }
    if (get(idfs_obj, &idfs, 4, 0) < 0) goto done;
    held = 1;
    if (get(acc_obj, &acc, 8, 1) < 0) goto done;
    held = 2;
    if (get(count_obj, &count, 1, 1) < 0) goto done;
    held = 3;
    if (get(touched_obj, &touched, 4, 1) < 0) goto done;
    held = 4;
    if (get(idx_obj, &idx, 8, 1) < 0) goto done;
    held = 5;
    if (get(scores_obj, &scores, 8, 1) < 0) goto done;
    held = 6;
    Py_ssize_t n = acc.len / 8, k = idx.len / 8;
    if (idfs.len / 4 != terms || count.len < n || touched.len / 4 < n || scores.len / 8 != k) {
        PyErr_SetString(PyExc_ValueError, "scratch or output buffers of the wrong length");
        goto done;
    }
    heap = PyMem_Malloc((k + 1) * sizeof(Hit));
    if (heap == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t returned = 0, matched = 0;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = score(terms, docs, ws, (const float *)idfs.buf, need, (double *)acc.buf,
                   (uint8_t *)count.buf, (int32_t *)touched.buf, n, heap, k, &returned, &matched);
    for (Py_ssize_t i = 0; i < returned; i++) {
        ((int64_t *)idx.buf)[i] = heap[i].pos;
        ((double *)scores.buf)[i] = heap[i].score;
    }
    Py_END_ALLOW_THREADS
    if (status < 0) {
        PyErr_SetString(PyExc_ValueError, "a document position outside the scratch");
        goto done;
    }
    result = Py_BuildValue("nn", returned, matched);
done:
    PyMem_Free(heap);
    Py_buffer *fixed[] = {&idfs, &acc, &count, &touched, &idx, &scores};
    for (int i = 0; i < held; i++) PyBuffer_Release(fixed[i]);
    for (Py_ssize_t i = 0; i < got_docs; i++) PyBuffer_Release(&docs[i]);
    for (Py_ssize_t i = 0; i < got_ws; i++) PyBuffer_Release(&ws[i]);
    PyMem_Free(docs);
    PyMem_Free(ws);
    Py_DECREF(docs_seq);
    Py_DECREF(ws_seq);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(docs, weights, idfs, need, acc, count, touched, out_idx, out_scores) -> "
     "(returned, matched): BM25 sums over the postings and the best len(out_idx) documents, "
     "best first (ties by smaller position)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bm25scan",
    "The exhaustive BM25 scorer of the in-memory keyword index (see scan).", -1, methods,
};

PyMODINIT_FUNC PyInit__bm25scan(void) { return PyModule_Create(&module); }
