/* One bytes object gathered from many memory ranges with the GIL released (gensyn_py/proof/state_bytes.py).
 *
 * A checkpoint's canonical bytes are a header and every tensor's data back to back. Serialised by a library that
 * holds the GIL while it copies, a 1.2 GB state stalls the training thread (whose Python runs between every op)
 * for the whole copy, though the copy itself runs on the checkpoint writer's thread. Here the bytes object is
 * allocated with the GIL held, then filled without it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* gather(size, head, parts) -> bytes of `size`: `head` (a bytes-like) at offset 0, then for each (address, length)
 * of `parts` the `length` bytes at `address`, back to back; together they fill exactly `size` bytes (checked, so no
 * byte of the result is left unwritten). The caller keeps every range alive and unchanged during the call. */
static PyObject *gather(PyObject *self, PyObject *args) {
    Py_ssize_t size;
    Py_buffer head;
    PyObject *parts;
    if (!PyArg_ParseTuple(args, "ny*O", &size, &head, &parts)) return NULL;
    PyObject *seq = PySequence_Fast(parts, "parts must be a sequence of (address, length)");
    if (seq == NULL || size < head.len) {
        if (seq != NULL) PyErr_SetString(PyExc_ValueError, "the head is longer than the result");
        Py_XDECREF(seq);
        PyBuffer_Release(&head);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    typedef struct { const char *src; Py_ssize_t len; } range_t;
    range_t *ranges = PyMem_Malloc(sizeof(range_t) * (size_t)(n > 0 ? n : 1));
    if (ranges == NULL) {
        Py_DECREF(seq);
        PyBuffer_Release(&head);
        return PyErr_NoMemory();
    }
    Py_ssize_t end = head.len;
    for (Py_ssize_t i = 0; i <= n; ++i) {
        unsigned long long address = 0;
        int bad = i == n ? end != size
                         : !PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "Kn", &address, &ranges[i].len) ||
                               ranges[i].len < 0 || ranges[i].len > size - end;
        if (bad) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "the head and parts do not fill exactly %zd bytes", size);
            PyMem_Free(ranges);
            Py_DECREF(seq);
            PyBuffer_Release(&head);
            return NULL;
        }
        if (i < n) {
            ranges[i].src = (const char *)(uintptr_t)address;
            end += ranges[i].len;
        }
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out != NULL) {
        char *dst = PyBytes_AS_STRING(out);
        memcpy(dst, head.buf, (size_t)head.len);
        Py_BEGIN_ALLOW_THREADS
        char *at = dst + head.len;
        for (Py_ssize_t i = 0; i < n; ++i) {
            memcpy(at, ranges[i].src, (size_t)ranges[i].len);
            at += ranges[i].len;
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(ranges);
    Py_DECREF(seq);
    PyBuffer_Release(&head);
    return out;
}

static PyMethodDef METHODS[] = {
    {"gather", gather, METH_VARARGS, "bytes of `size`: `head`, then each (address, length) back to back, GIL released."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_gather_native", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__gather_native(void) { return PyModule_Create(&MODULE); }
