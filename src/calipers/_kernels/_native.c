/*
 * calipers._kernels._native: the compiled passes behind the NumPy fast paths.
 *
 * Every function here is the single-pass form of a pure NumPy pass of the same
 * name in calipers._kernels.rankstats, calipers._kernels.ranges (score_table)
 * or calipers._bootstrap.resample / kernels, and gives the same integers (and,
 * for floats, the same formula with a stated summation order). The Python callers check dtypes, shapes
 * and contiguity; these functions check what they need to stay in bounds and
 * raise ValueError otherwise. The long loops run without the GIL, so NumPy
 * and other Python threads (the bootstrap's workers) run beside them.
 *
 * Buffers arrive through the buffer protocol (C-contiguous); no NumPy C API
 * is needed, so the module builds against any NumPy.
 *
 * Integer limits: row counts are int64; sums of positions and Mann-Whitney
 * counts are accumulated in unsigned 128-bit integers (exact for any n below
 * 2**63) and returned as Python ints.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

typedef unsigned __int128 u128;

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* one build runs the widest vector unit the CPU has (resolved once, at load) */
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CLONES
#endif

#define MAG ((int64_t)0x7FFFFFFFFFFFFFFFLL)

/* ------------------------------------------------------------------------ */
/* buffers and results                                                       */
/* ------------------------------------------------------------------------ */

static int
get_buf(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (itemsize > 0 && view->itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd-byte items, got %zd", name, itemsize,
                     view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static Py_ssize_t
nitems(Py_buffer *v)
{
    return v->itemsize ? v->len / v->itemsize : 0;
}

static PyObject *
pylong_u128(u128 x)
{
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(x >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)x);
    PyObject *sh = PyLong_FromLong(64);
    PyObject *t = NULL, *r = NULL;
    if (hi && lo && sh && (t = PyNumber_Lshift(hi, sh)) != NULL)
        r = PyNumber_Or(t, lo);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(sh);
    Py_XDECREF(t);
    return r;
}

/* the buffers of one call, acquired together and released together; an ``obj`` of None
   (an optional argument not given) holds no buffer */
typedef struct {
    PyObject *obj;
    Py_ssize_t itemsize;    /* 0: any */
    int writable;
    const char *name;
    Py_buffer view;
} arg_buf;

static void
release_bufs(arg_buf *b, int k)
{
    for (int i = 0; i < k; i++)
        if (b[i].obj != Py_None)
            PyBuffer_Release(&b[i].view);
}

static int
get_bufs(arg_buf *b, int k)
{
    for (int i = 0; i < k; i++) {
        if (b[i].obj == Py_None) {
            memset(&b[i].view, 0, sizeof(Py_buffer));
            continue;
        }
        if (get_buf(b[i].obj, &b[i].view, b[i].itemsize, b[i].writable, b[i].name) < 0) {
            release_bufs(b, i);
            return -1;
        }
    }
    return 0;
}

/* a ValueError after releasing the call's buffers */
static PyObject *
refuse(arg_buf *b, int k, const char *message)
{
    release_bufs(b, k);
    PyErr_SetString(PyExc_ValueError, message);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* rank statistics: the packed keys                                          */
/* ------------------------------------------------------------------------ */

/* signed and unsigned extremes of float64 bits, and the smallest nonzero magnitude */
CLONES static void
extremes_loop(const int64_t *b, Py_ssize_t n, int64_t *out_s, uint64_t *out_u, uint64_t *out_nz)
{
    int64_t smin = INT64_MAX, smax = INT64_MIN;
    uint64_t umin = UINT64_MAX, umax = 0, nzm1 = UINT64_MAX;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t x = b[i];
        uint64_t u = (uint64_t)x;
        uint64_t m1 = (uint64_t)(x & MAG) - 1;     /* a zero magnitude: the largest */
        smin = x < smin ? x : smin;
        smax = x > smax ? x : smax;
        umin = u < umin ? u : umin;
        umax = u > umax ? u : umax;
        nzm1 = m1 < nzm1 ? m1 : nzm1;
    }
    out_s[0] = smin;
    out_s[1] = smax;
    out_u[0] = umin;
    out_u[1] = umax;
    *out_nz = nzm1;
}

PyDoc_STRVAR(extremes_doc,
"extremes(s) -> (smin, smax, umin, umax, nz)\n\n"
"Signed and unsigned min / max of the bits of float64 scores ``s`` and the\n"
"smallest nonzero magnitude (None if every score is a zero), in one pass.");

static PyObject *
py_extremes(PyObject *self, PyObject *args)
{
    PyObject *so;
    Py_buffer s;
    if (!PyArg_ParseTuple(args, "O", &so) || get_buf(so, &s, 8, 0, "s") < 0)
        return NULL;
    Py_ssize_t n = nitems(&s);
    int64_t sx[2];
    uint64_t ux[2], nzm1;
    Py_BEGIN_ALLOW_THREADS
    extremes_loop((const int64_t *)s.buf, n, sx, ux, &nzm1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&s);
    if (nzm1 == UINT64_MAX)
        return Py_BuildValue("(LLKKO)", (long long)sx[0], (long long)sx[1],
                             (unsigned long long)ux[0], (unsigned long long)ux[1], Py_None);
    return Py_BuildValue("(LLKKK)", (long long)sx[0], (long long)sx[1],
                         (unsigned long long)ux[0], (unsigned long long)ux[1],
                         (unsigned long long)(nzm1 + 1));
}

/* the packing map of rankstats.packed_sort: one pass, labels checked on the way */
#define PACK_LOOP(T)                                                               \
    for (Py_ssize_t i = 0; i < n; i++) {                                           \
        int64_t x = b[i];                                                          \
        int64_t sg = x >> 63;                                                      \
        int64_t t = (x & MAG) - g;                                                 \
        if (zero)                                                                  \
            t = t < 0 ? 0 : t;                                                     \
        t ^= sg;                                                                   \
        if (sym)                                                                   \
            t -= sg;                                                               \
        t -= kmin;                                                                 \
        uint64_t lab = ((const T *)y)[i];                                          \
        bad |= lab;                                                                \
        P += lab;                                                                  \
        out[i] = (int64_t)(((uint64_t)t << 1) | (lab & 1));                        \
    }

CLONES static int64_t
pack_loop(const int64_t *b, const char *y, Py_ssize_t ysize, int64_t *out, Py_ssize_t n,
          int64_t g, int64_t kmin, int zero, int sym)
{
    uint64_t bad = 0, P = 0;
    switch (ysize) {
    case 1: PACK_LOOP(uint8_t) break;
    case 2: PACK_LOOP(uint16_t) break;
    case 4: PACK_LOOP(uint32_t) break;
    default: PACK_LOOP(uint64_t) break;
    }
    return bad > 1 ? -1 : (int64_t)P;
}

PyDoc_STRVAR(pack_doc,
"pack(s, y, out, g, kmin, zero, sym) -> P\n\n"
"rankstats.packed_sort's keys ((key - kmin) << 1) | label of float64 scores\n"
"``s`` and 0/1 labels ``y`` (1, 2, 4 or 8-byte integers) into int64 ``out``,\n"
"unsorted; returns the number of positives, or -1 when a label is not 0 or 1.");

static PyObject *
py_pack(PyObject *self, PyObject *args)
{
    PyObject *so, *yo, *oo;
    long long g, kmin;
    int zero, sym;
    if (!PyArg_ParseTuple(args, "OOOLLpp", &so, &yo, &oo, &g, &kmin, &zero, &sym))
        return NULL;
    arg_buf b[3] = {{so, 8, 0, "s"}, {yo, 0, 0, "y"}, {oo, 8, 1, "out"}};
    if (get_bufs(b, 3) < 0)
        return NULL;
    Py_ssize_t n = nitems(&b[0].view), ys = b[1].view.itemsize;
    if (nitems(&b[1].view) != n || nitems(&b[2].view) != n ||
        !(ys == 1 || ys == 2 || ys == 4 || ys == 8))
        return refuse(b, 3, "pack: s, y and out must have one length, y 1, 2, 4 or 8-byte "
                            "integers");
    int64_t P;
    Py_BEGIN_ALLOW_THREADS
    P = pack_loop((const int64_t *)b[0].view.buf, (const char *)b[1].view.buf, ys,
                  (int64_t *)b[2].view.buf, n, (int64_t)g, (int64_t)kmin, zero, sym);
    Py_END_ALLOW_THREADS
    release_bufs(b, 3);
    return PyLong_FromLongLong(P);
}

/* the smallest xor of adjacent keys: at most 1 where two scores tie */
CLONES static uint64_t
min_adjacent_xor(const int64_t *k, Py_ssize_t n)
{
    uint64_t mn = UINT64_MAX;
    for (Py_ssize_t i = 1; i < n; i++) {
        uint64_t d = (uint64_t)(k[i] ^ k[i - 1]);
        mn = d < mn ? d : mn;
    }
    return mn;
}

/* the sum of the positives' positions, the positives, and the smallest adjacent xor */
#define BLOCK 65536
CLONES static void
positions_loop(const int64_t *k, Py_ssize_t n, u128 *S, int64_t *P, uint64_t *mn)
{
    u128 s = 0;
    int64_t p = 0;
    uint64_t m = UINT64_MAX;
    for (Py_ssize_t a = 0; a < n; a += BLOCK) {
        Py_ssize_t e = a + BLOCK < n ? a + BLOCK : n;
        uint64_t ls = 0, lp = 0, lm;   /* in-block sums below 2**32 each */
        for (Py_ssize_t i = a; i < e; i++) {
            uint64_t lab = (uint64_t)k[i] & 1;
            ls += (0 - lab) & (uint64_t)(i - a);
            lp += lab;
        }
        lm = min_adjacent_xor(k + (a ? a - 1 : 0), e - (a ? a - 1 : 0));   /* (in cache) */
        s += (u128)ls + (u128)lp * (u128)a;
        p += (int64_t)lp;
        m = lm < m ? lm : m;
    }
    *S = s;
    *P = p;
    *mn = m;
}

/* sum over tie groups (equal key >> 1) of negatives x positives: a group's negatives
   sort before its positives, so each positive adds the negatives seen in its group */
static u128
mixed_ties(const int64_t *k, Py_ssize_t n)
{
    u128 T = 0;
    uint64_t neg = 0, t = 0;
    int64_t prev = n ? k[0] >> 1 : 0;
    for (Py_ssize_t a = 0; a < n; a += BLOCK) {
        Py_ssize_t e = a + BLOCK < n ? a + BLOCK : n;
        t = 0;                         /* below 2**63 per block (n < 2**47) */
        for (Py_ssize_t i = a; i < e; i++) {
            int64_t h = k[i] >> 1;
            uint64_t lab = (uint64_t)k[i] & 1;
            neg = h == prev ? neg : 0;
            t += (0 - lab) & neg;
            neg += 1 - lab;
            prev = h;
        }
        T += t;
    }
    return T;
}

PyDoc_STRVAR(auc_packed_doc,
"auc_packed(keys) -> 2U\n\n"
"Twice the Mann-Whitney count (ties 1/2), exact, of sorted packed keys:\n"
"2 (S - P (P - 1) / 2) - T with S the positives' positions and T the tied\n"
"negative-positive pairs (rankstats.packed_roc_auc).");

static PyObject *
py_auc_packed(PyObject *self, PyObject *args)
{
    PyObject *ko;
    Py_buffer kb;
    if (!PyArg_ParseTuple(args, "O", &ko) || get_buf(ko, &kb, 8, 0, "keys") < 0)
        return NULL;
    const int64_t *k = (const int64_t *)kb.buf;
    Py_ssize_t n = nitems(&kb);
    u128 S, T = 0;
    int64_t P;
    uint64_t mn;
    Py_BEGIN_ALLOW_THREADS
    positions_loop(k, n, &S, &P, &mn);
    if (mn <= 1)
        T = mixed_ties(k, n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&kb);
    u128 base = (u128)P * (u128)(P > 0 ? P - 1 : 0) / 2;
    return pylong_u128(2 * (S - base) - T);
}

/* a compensated running sum (Neumaier): the block sums of the step sums add into it */
static inline void
neumaier(double *s, double *c, double x)
{
    double t = *s + x;
    *c += fabs(*s) >= fabs(x) ? (*s - t) + x : (x - t) + *s;
    *s = t;
}

/* (P - j) / (n - i) for the positives of ranks j0 .. j0 + c - 1 at positions idx, summed
   in W lanes: exact integers in double, one rounding in each division */
#define AP_LANES 8
CLONES static void
ap_terms(const int64_t *idx, Py_ssize_t c, int64_t P, int64_t j0, int64_t n, double *lanes)
{
    for (Py_ssize_t t = 0; t < c; t += AP_LANES)
        for (int l = 0; l < AP_LANES; l++) {
            Py_ssize_t u = t + l;
            lanes[l] += u < c ? (double)(P - j0 - u) / (double)(n - idx[u]) : 0.0;
        }
}

/* average precision over sorted packed keys: untied, one term per positive; each
   block's sum (lanes added in order) goes into a compensated total */
static double
ap_untied(const int64_t *k, Py_ssize_t n, int64_t P)
{
    enum { L = 4096 };
    int64_t idx[L + AP_LANES];
    double s = 0.0, comp = 0.0;
    int64_t seen = 0;
    for (Py_ssize_t a = 0; a < n; a += L) {
        Py_ssize_t e = a + L < n ? a + L : n;
        Py_ssize_t c = 0;
        for (Py_ssize_t i = a; i < e; i++) {      /* the positions of the positives */
            idx[c] = i;
            c += k[i] & 1;
        }
        double lanes[AP_LANES] = {0};
        ap_terms(idx, c, P, seen, (int64_t)n, lanes);
        double b = 0.0;
        for (int l = 0; l < AP_LANES; l++)
            b += lanes[l];
        neumaier(&s, &comp, b);
        seen += c;
    }
    return s + comp;
}

/* average precision over tie groups: n1 * tp / (tp + fp) at each group's threshold */
static double
ap_groups(const int64_t *k, Py_ssize_t n, int64_t P)
{
    double s = 0.0, comp = 0.0;
    int64_t before = 0, n1 = 0, st = 0;
    int64_t prev = n ? k[0] >> 1 : 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i == n || (k[i] >> 1) != prev) {
            if (n1)
                neumaier(&s, &comp, (double)n1 * ((double)(P - before) / (double)(n - st)));
            if (i == n)
                break;
            before += n1;
            n1 = 0;
            st = i;
            prev = k[i] >> 1;
        }
        n1 += k[i] & 1;
    }
    return s + comp;
}

PyDoc_STRVAR(ap_packed_doc,
"ap_packed(keys, P) -> sum\n\n"
"The average-precision step sum (not yet divided by P) of sorted packed keys:\n"
"(P - j) / (n - i) per positive without ties, n1 tp / (tp + fp) per tie group\n"
"with them (rankstats.packed_average_precision).");

static PyObject *
py_ap_packed(PyObject *self, PyObject *args)
{
    PyObject *ko;
    long long P;
    Py_buffer kb;
    if (!PyArg_ParseTuple(args, "OL", &ko, &P) || get_buf(ko, &kb, 8, 0, "keys") < 0)
        return NULL;
    const int64_t *k = (const int64_t *)kb.buf;
    Py_ssize_t n = nitems(&kb);
    double s;
    Py_BEGIN_ALLOW_THREADS
    s = min_adjacent_xor(k, n) > 1 ? ap_untied(k, n, (int64_t)P) : ap_groups(k, n, (int64_t)P);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&kb);
    return PyFloat_FromDouble(s);
}

/* the inverse of the packing map: a packed key's score bits */
static inline int64_t
unpack_one(int64_t key, int64_t kmin, int64_t mmin, int zero, int sym)
{
    int64_t k = (key >> 1) + kmin;
    int64_t sg = k >> 63;
    k ^= sg;
    if (sym)
        k -= sg;
    int z = zero && k == 0;
    k += mmin;
    if (z)
        k = 0;
    return k | (int64_t)((uint64_t)sg << 63);
}

PyDoc_STRVAR(roc_packed_doc,
"roc_packed(keys, P, fpr, tpr, thr, kmin, mmin, zero, sym) -> G\n\n"
"roc_curve's vertices of untied sorted packed keys, read top-down into float64\n"
"``fpr``, ``tpr``, ``thr`` (n + 1 each) after the first point (0, 0, inf);\n"
"returns the points written, or -1 when two scores tie\n"
"(rankstats.packed_roc_curve).");

static PyObject *
py_roc_packed(PyObject *self, PyObject *args)
{
    PyObject *ko, *fo, *to, *ho;
    long long P, kmin, mmin;
    int zero, sym;
    if (!PyArg_ParseTuple(args, "OLOOOLLpp", &ko, &P, &fo, &to, &ho, &kmin, &mmin, &zero,
                          &sym))
        return NULL;
    arg_buf b[4] = {{ko, 8, 0, "keys"}, {fo, 8, 1, "fpr"}, {to, 8, 1, "tpr"},
                    {ho, 8, 1, "thr"}};
    if (get_bufs(b, 4) < 0)
        return NULL;
    Py_ssize_t n = nitems(&b[0].view);
    if (nitems(&b[1].view) < n + 1 || nitems(&b[2].view) < n + 1 || nitems(&b[3].view) < n + 1)
        return refuse(b, 4, "roc_packed: fpr, tpr and thr need n + 1 items");
    const int64_t *k = (const int64_t *)b[0].view.buf;
    double *fpr = (double *)b[1].view.buf, *tpr = (double *)b[2].view.buf;
    int64_t *thr = (int64_t *)b[3].view.buf;
    Py_ssize_t G = 1;
    Py_BEGIN_ALLOW_THREADS
    double fP = (double)P, fN = (double)(n - P);
    int64_t above = 0;        /* positives in (i, n) */
    fpr[0] = tpr[0] = 0.0;
    {
        double inf = INFINITY;
        memcpy(&thr[0], &inf, 8);
    }
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        int64_t lab = k[i] & 1;
        int keep = 1;
        if (i > 0) {
            if ((uint64_t)(k[i] ^ k[i - 1]) <= 1) {
                G = -1;
                break;
            }
            keep = (k[i - 1] & 1) != lab;
        }
        above += lab;
        if (keep) {
            tpr[G] = (double)above / fP;
            fpr[G] = (double)((n - i) - above) / fN;
            thr[G] = unpack_one(k[i], (int64_t)kmin, (int64_t)mmin, zero, sym);
            G++;
        }
    }
    Py_END_ALLOW_THREADS
    release_bufs(b, 4);
    return PyLong_FromSsize_t(G);
}

/* ------------------------------------------------------------------------ */
/* rank statistics: heavily tied scores, counted per distinct score           */
/* ------------------------------------------------------------------------ */

/* An open-addressing table of distinct score bits (linear probing, multiplicative hash),
   whose slots hold the counts themselves: a score already seen costs one hash, one
   compare (taken the same way almost always) and one increment. It starts at 1024
   slots (24 KiB, in the L1 cache) and doubles whenever it passes 1/8 full, so
   collisions stay rare. */
#define EMPTY_KEY 0xFFFFFFFFFFFFFFFFULL     /* the bits of a NaN: never a finite score */

typedef struct {
    uint64_t *own;      /* the score bits held by each slot, or EMPTY_KEY */
    int64_t *cnt;       /* negatives and positives of each slot's score */
    uint64_t mask;
    int shift;
} table_t;

static inline uint64_t
table_hash(uint64_t x, int shift)
{
    return (x * 0x9E3779B97F4A7C15ULL) >> shift;
}

static inline uint64_t
table_find(const table_t *tb, uint64_t x)
{
    uint64_t h = table_hash(x, tb->shift);
    while (tb->own[h] != x && tb->own[h] != EMPTY_KEY)
        h = (h + 1) & tb->mask;
    return h;
}

static void
table_free(table_t *tb)
{
    free(tb->own);
    free(tb->cnt);
}

/* a table of 2**logT slots holding the entries of ``old`` (if any) */
static int
table_make(table_t *tb, int logT, const table_t *old)
{
    uint64_t size = (uint64_t)1 << logT;
    table_t t = {(uint64_t *)malloc(8 * size), (int64_t *)calloc(2 * size, 8), size - 1,
                 64 - logT};
    if (!t.own || !t.cnt) {
        table_free(&t);
        return -1;
    }
    memset(t.own, 0xFF, 8 * size);
    if (old) {
        for (uint64_t h = 0; h <= old->mask; h++) {
            if (old->own[h] == EMPTY_KEY)
                continue;
            uint64_t g = table_find(&t, old->own[h]);
            t.own[g] = old->own[h];
            t.cnt[2 * g] = old->cnt[2 * h];
            t.cnt[2 * g + 1] = old->cnt[2 * h + 1];
        }
    }
    *tb = t;
    return 0;
}

/* returns G, -1 past cap (the pass stops there), -2 for a label not 0 / 1, -3 no memory */
#define TABLE_FN(NAME, T)                                                          \
static Py_ssize_t                                                                  \
NAME(const int64_t *b, const T *y, Py_ssize_t n, uint64_t *vals, int64_t *cnt,     \
     Py_ssize_t cap)                                                               \
{                                                                                  \
    table_t tb;                                                                    \
    int logT = 10;                                                                 \
    if (table_make(&tb, logT, NULL) < 0)                                           \
        return -3;                                                                 \
    Py_ssize_t G = 0, grow = (Py_ssize_t)1 << (logT - 3);                          \
    uint64_t bad = 0;                                                              \
    uint64_t *own = tb.own;                                                        \
    int64_t *tc = tb.cnt;                                                          \
    int shift = tb.shift;                                                          \
    for (Py_ssize_t i = 0; i < n; i++) {                                           \
        uint64_t x = (uint64_t)b[i];                                               \
        x = (x << 1) ? x : 0;                  /* -0.0 counts as 0.0 */            \
        uint64_t h = table_hash(x, shift);                                         \
        if (__builtin_expect(own[h] != x, 0)) {                                    \
            h = table_find(&tb, x);                                                \
            if (own[h] == EMPTY_KEY) {                                             \
                if (G == cap) {                                                    \
                    G = -1;                                                        \
                    break;                                                         \
                }                                                                  \
                own[h] = x;                                                        \
                if (++G == grow) {                                                 \
                    table_t big;                                                   \
                    if (table_make(&big, ++logT, &tb) < 0) {                       \
                        G = -3;                                                    \
                        break;                                                     \
                    }                                                              \
                    table_free(&tb);                                               \
                    tb = big;                                                      \
                    own = tb.own;                                                  \
                    tc = tb.cnt;                                                   \
                    shift = tb.shift;                                              \
                    grow <<= 1;                                                    \
                    h = table_find(&tb, x);                                        \
                }                                                                  \
            }                                                                      \
        }                                                                          \
        uint64_t lab = y[i];                                                       \
        bad |= lab;                                                                \
        tc[2 * h + (lab & 1)]++;                                                   \
    }                                                                              \
    if (G >= 0) {                                                                  \
        Py_ssize_t j = 0;                                                          \
        for (uint64_t h = 0; h <= tb.mask; h++)                                    \
            if (own[h] != EMPTY_KEY) {                                             \
                vals[j] = own[h];                                                  \
                cnt[2 * j] = tc[2 * h];                                            \
                cnt[2 * j + 1] = tc[2 * h + 1];                                    \
                j++;                                                               \
            }                                                                      \
    }                                                                              \
    table_free(&tb);                                                               \
    return G >= 0 && bad > 1 ? -2 : G;                                             \
}

TABLE_FN(table_u8, uint8_t)
TABLE_FN(table_u16, uint16_t)
TABLE_FN(table_u32, uint32_t)
TABLE_FN(table_u64, uint64_t)

PyDoc_STRVAR(score_table_doc,
"score_table(s, y, vals, cnt) -> G\n\n"
"The distinct float64 scores of ``s`` (-0.0 as 0.0), as bits in uint64\n"
"``vals`` (in no particular order), and per distinct score the negatives and\n"
"positives of 0/1 labels ``y`` in int64 ``cnt`` (2 per score), by one pass\n"
"through an open-addressing table. Returns G, the number of distinct scores\n"
"(the first G entries are written); -1 once they pass len(vals) (the pass\n"
"stops there); -2 when a label is not 0 or 1.");

static PyObject *
py_score_table(PyObject *self, PyObject *args)
{
    PyObject *so, *yo, *vo, *co;
    if (!PyArg_ParseTuple(args, "OOOO", &so, &yo, &vo, &co))
        return NULL;
    arg_buf b[4] = {{so, 8, 0, "s"}, {yo, 0, 0, "y"}, {vo, 8, 1, "vals"}, {co, 8, 1, "cnt"}};
    if (get_bufs(b, 4) < 0)
        return NULL;
    Py_ssize_t n = nitems(&b[0].view), cap = nitems(&b[2].view), ys = b[1].view.itemsize;
    if (nitems(&b[1].view) != n || nitems(&b[3].view) < 2 * cap || cap >= (1 << 28) ||
        !(ys == 1 || ys == 2 || ys == 4 || ys == 8))
        return refuse(b, 4, "score_table: bad buffer sizes");
    Py_ssize_t G = 0;
    Py_BEGIN_ALLOW_THREADS
    const int64_t *s = (const int64_t *)b[0].view.buf;
    const void *y = b[1].view.buf;
    uint64_t *vals = (uint64_t *)b[2].view.buf;
    int64_t *cnt = (int64_t *)b[3].view.buf;
    switch (ys) {
    case 1: G = table_u8(s, (const uint8_t *)y, n, vals, cnt, cap); break;
    case 2: G = table_u16(s, (const uint16_t *)y, n, vals, cnt, cap); break;
    case 4: G = table_u32(s, (const uint32_t *)y, n, vals, cnt, cap); break;
    default: G = table_u64(s, (const uint64_t *)y, n, vals, cnt, cap); break;
    }
    Py_END_ALLOW_THREADS
    release_bufs(b, 4);
    if (G == -3)
        return PyErr_NoMemory();
    return PyLong_FromSsize_t(G);
}

/* ------------------------------------------------------------------------ */
/* the bootstrap: counts from the counter-based hash, and the AUC parts       */
/* ------------------------------------------------------------------------ */

#define M1 0x85EBCA6BU
#define M2 0xC2B2AE35U

/* resample._hash_inplace of one draw: kgx = kg ^ (kg >> 16), k1s = k1 ^ (k1 >> 16) */
static inline uint32_t
hash_word(uint32_t kgx, uint32_t k1s, uint32_t k2)
{
    uint32_t x = kgx ^ k1s;
    x *= M1;
    x ^= x >> 13;
    x *= M2;
    x ^= x >> 16;
    x += k2;
    x ^= x >> 16;
    x *= M1;
    x ^= x >> 13;
    x *= M2;
    return x ^ (x >> 16);
}

/* Poisson counts #{j : u >= T[j]} of the rows' words; returns their total. Blocks of
   words are hashed, then compared with one threshold at a time: both loops vectorise. */
#define DRAW_BLOCK 512
CLONES static int64_t
poisson_loop(const uint32_t *kgx, Py_ssize_t n, uint32_t k1s, uint32_t k2, const uint32_t *T,
             Py_ssize_t nt, uint8_t *c)
{
    uint32_t u[DRAW_BLOCK], v[DRAW_BLOCK];
    int64_t total = 0;
    for (Py_ssize_t a = 0; a < n; a += DRAW_BLOCK) {
        Py_ssize_t m = a + DRAW_BLOCK < n ? DRAW_BLOCK : n - a;
        for (Py_ssize_t i = 0; i < m; i++)
            u[i] = hash_word(kgx[a + i], k1s, k2);
        memset(v, 0, sizeof v);
        for (Py_ssize_t j = 0; j < nt; j++) {
            uint32_t t = T[j];
            for (Py_ssize_t i = 0; i < m; i++)
                v[i] += u[i] >= t;
        }
        uint32_t lt = 0;
        for (Py_ssize_t i = 0; i < m; i++) {
            c[a + i] = (uint8_t)v[i];
            lt += v[i];
        }
        total += lt;
    }
    return total;
}

PyDoc_STRVAR(poisson_draw_doc,
"poisson_draw(kgx, k1, k2, T, c) -> total\n\n"
"One replicate's Poisson counts (uint8 ``c``) of the draws whose shifted\n"
"counters are uint32 ``kgx`` (resample._shifted_keys), under replicate keys\n"
"``(k1, k2)`` and uint32 thresholds ``T`` (fewer than 256): the integers of\n"
"resample._hash_inplace and resample._poisson_inplace. Returns their total.");

static PyObject *
py_poisson_draw(PyObject *self, PyObject *args)
{
    PyObject *ko, *to, *co;
    unsigned long k1, k2;
    if (!PyArg_ParseTuple(args, "OkkOO", &ko, &k1, &k2, &to, &co))
        return NULL;
    arg_buf b[3] = {{ko, 4, 0, "kgx"}, {to, 4, 0, "T"}, {co, 1, 1, "c"}};
    if (get_bufs(b, 3) < 0)
        return NULL;
    Py_ssize_t n = nitems(&b[0].view), nt = nitems(&b[1].view);
    if (nitems(&b[2].view) < n || nt > 255)
        return refuse(b, 3, "poisson_draw: c too short or too many thresholds");
    int64_t total;
    Py_BEGIN_ALLOW_THREADS
    uint32_t a1 = (uint32_t)k1;
    total = poisson_loop((const uint32_t *)b[0].view.buf, n, a1 ^ (a1 >> 16), (uint32_t)k2,
                         (const uint32_t *)b[1].view.buf, nt, (uint8_t *)b[2].view.buf);
    Py_END_ALLOW_THREADS
    release_bufs(b, 3);
    return PyLong_FromLongLong(total);
}

PyDoc_STRVAR(topup_draw_doc,
"topup_draw(kgx, k1, k2, T, n, M, inv, c) -> status\n\n"
"One replicate's plain multinomial counts (resample.numpy_drawer): Poisson\n"
"counts of the first n shifted counters of ``kgx`` (none when ``T`` is\n"
"empty), topped up to n draws by the extra draws that follow them, each at\n"
"layout position ``inv[(u * n) >> 32]`` (``inv`` None: the identity), into\n"
"uint8 ``c``. Returns 0; -1 when the Poisson total is above n or more than M\n"
"short of it (the caller draws the replicate directly); -2 when a count would\n"
"pass 255 (the caller counts in int64).");

static PyObject *
py_topup_draw(PyObject *self, PyObject *args)
{
    PyObject *ko, *to, *io, *co;
    unsigned long k1, k2;
    Py_ssize_t n, M;
    if (!PyArg_ParseTuple(args, "OkkOnnOO", &ko, &k1, &k2, &to, &n, &M, &io, &co))
        return NULL;
    arg_buf b[4] = {{ko, 4, 0, "kgx"}, {to, 4, 0, "T"}, {io, 8, 0, "inv"}, {co, 1, 1, "c"}};
    if (get_bufs(b, 4) < 0)
        return NULL;
    Py_ssize_t nt = nitems(&b[1].view), nk = nitems(&b[0].view);
    if (n < 0 || M < 0 || nt > 255 || nitems(&b[3].view) < n ||
        (io != Py_None && nitems(&b[2].view) < n) || nk != (nt ? n + M : M))
        return refuse(b, 4, "topup_draw: bad buffer sizes");
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    const uint32_t *kg = (const uint32_t *)b[0].view.buf;
    const int64_t *inv = (const int64_t *)b[2].view.buf;     /* NULL: the identity */
    uint8_t *c = (uint8_t *)b[3].view.buf;
    uint32_t a1 = (uint32_t)k1, k1s = a1 ^ (a1 >> 16), b2 = (uint32_t)k2;
    int64_t total = 0;
    if (nt)
        total = poisson_loop(kg, n, k1s, b2, (const uint32_t *)b[1].view.buf, nt, c);
    else
        memset(c, 0, (size_t)n);
    const uint32_t *extra = nt ? kg + n : kg;
    int64_t missing = (int64_t)n - total;
    if (missing < 0 || missing > M) {
        status = -1;
    } else {
        for (int64_t t = 0; t < missing; t++) {
            uint32_t u = hash_word(extra[t], k1s, b2);
            int64_t pos = (int64_t)(((uint64_t)u * (uint64_t)n) >> 32);
            if (inv) {
                pos = inv[pos];
                if ((uint64_t)pos >= (uint64_t)n) {
                    status = -3;
                    break;
                }
            }
            if (c[pos] == 255) {
                status = -2;
                break;
            }
            c[pos]++;
        }
    }
    Py_END_ALLOW_THREADS
    release_bufs(b, 4);
    if (status == -3) {
        PyErr_SetString(PyExc_ValueError, "topup_draw: inv holds a position outside [0, n)");
        return NULL;
    }
    return PyLong_FromLong(status);
}

/* The AUC parts of a replicate over the [negatives | positives] layout: a plan holds, per
   model, its read rows (r0 .. r0 + m - 1 of the layout), the offset of its summed class,
   and its read rows in the order of their bounds (perm; lo ascending, hi the end of lo's
   tie group or none without ties), checked once; each replicate then writes the
   layout's prefix sums and reads them in ascending order, the counts gathered from the
   read class (a few hundred KiB at most, in cache). */
#define MAX_MODELS 8

typedef struct {
    Py_ssize_t n, N, nm;
    Py_ssize_t r0[MAX_MODELS], m[MAX_MODELS], off[MAX_MODELS];
    Py_buffer perm[MAX_MODELS], lo[MAX_MODELS], hi[MAX_MODELS];
    int has_perm[MAX_MODELS], has_hi[MAX_MODELS], held;
} plan_t;

static void
plan_release(plan_t *pl)
{
    for (int t = 0; t < pl->held; t++) {
        PyBuffer_Release(&pl->lo[t]);
        if (pl->has_hi[t])
            PyBuffer_Release(&pl->hi[t]);
        if (pl->has_perm[t])
            PyBuffer_Release(&pl->perm[t]);
    }
    pl->held = 0;
}

static void
plan_destroy(PyObject *cap)
{
    plan_t *pl = (plan_t *)PyCapsule_GetPointer(cap, "calipers.split_plan");
    if (pl) {
        plan_release(pl);
        free(pl);
    }
}

/* are v[0 .. m) ascending and within [0, lim]? */
static int
ascending_within(const int64_t *v, Py_ssize_t m, int64_t lim)
{
    if (m == 0)
        return 1;
    if (v[0] < 0 || v[m - 1] > lim)
        return 0;
    int64_t bad = 0;
    for (Py_ssize_t i = 1; i < m; i++)
        bad |= v[i] < v[i - 1];
    return !bad;
}

/* is perm a permutation of 0 .. m - 1? */
static int
is_permutation(const int64_t *p, Py_ssize_t m)
{
    uint8_t *seen = (uint8_t *)calloc((size_t)m + 1, 1);
    int ok = seen != NULL;
    for (Py_ssize_t i = 0; ok && i < m; i++) {
        if (p[i] < 0 || p[i] >= m || seen[p[i]])
            ok = 0;
        else
            seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

PyDoc_STRVAR(split_plan_doc,
"split_plan(N, n, models) -> plan\n\n"
"The checked plan of :func:`split_parts` for a layout of n rows whose first N\n"
"are negatives. ``models``: up to 8 tuples ``(r0, m, off, perm, lo, hi)``: the\n"
"read rows r0 .. r0 + m - 1, their summed class's offset in the layout, the\n"
"read rows in bound order (intp permutation of 0 .. m - 1, or None: as they\n"
"are), and their tie-group bounds among the summed class in that order (intp,\n"
"ascending, in [0, n - off]; ``hi`` None: no ties, hi = lo). The arrays are\n"
"held until the plan is freed. Raises ValueError for anything out of range.");

static PyObject *
py_split_plan(PyObject *self, PyObject *args)
{
    Py_ssize_t N, n;
    PyObject *models;
    if (!PyArg_ParseTuple(args, "nnO", &N, &n, &models))
        return NULL;
    if (!PyTuple_Check(models) || PyTuple_GET_SIZE(models) > MAX_MODELS || N < 0 || N > n) {
        PyErr_SetString(PyExc_ValueError, "split_plan: models must be a tuple of at most 8, "
                        "and 0 <= N <= n");
        return NULL;
    }
    plan_t *pl = (plan_t *)calloc(1, sizeof(plan_t));
    if (!pl)
        return PyErr_NoMemory();
    pl->n = n;
    pl->N = N;
    pl->nm = PyTuple_GET_SIZE(models);
    for (Py_ssize_t t = 0; t < pl->nm; t++) {
        PyObject *po, *lo_o, *hi_o;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(models, t), "nnnOOO", &pl->r0[t], &pl->m[t],
                              &pl->off[t], &po, &lo_o, &hi_o))
            goto fail;
        if (get_buf(lo_o, &pl->lo[t], 8, 0, "lo") < 0)
            goto fail;
        pl->has_hi[t] = hi_o != Py_None;
        if (pl->has_hi[t] && get_buf(hi_o, &pl->hi[t], 8, 0, "hi") < 0) {
            PyBuffer_Release(&pl->lo[t]);
            goto fail;
        }
        pl->has_perm[t] = po != Py_None;
        if (pl->has_perm[t] && get_buf(po, &pl->perm[t], 8, 0, "perm") < 0) {
            PyBuffer_Release(&pl->lo[t]);
            if (pl->has_hi[t])
                PyBuffer_Release(&pl->hi[t]);
            goto fail;
        }
        pl->held++;
        Py_ssize_t m = pl->m[t], off = pl->off[t], r0 = pl->r0[t];
        int ok = r0 >= 0 && m >= 0 && r0 + m <= n && off >= 0 && off <= n &&
                 nitems(&pl->lo[t]) == m &&
                 ascending_within((const int64_t *)pl->lo[t].buf, m, (int64_t)(n - off));
        if (ok && pl->has_hi[t])
            ok = nitems(&pl->hi[t]) == m &&
                 ascending_within((const int64_t *)pl->hi[t].buf, m, (int64_t)(n - off));
        if (ok && pl->has_perm[t])
            ok = nitems(&pl->perm[t]) == m &&
                 is_permutation((const int64_t *)pl->perm[t].buf, m);
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "split_plan: a model's rows, order or bounds "
                            "are out of range");
            goto fail;
        }
    }
    PyObject *cap = PyCapsule_New(pl, "calipers.split_plan", plan_destroy);
    if (!cap)
        goto fail;
    return cap;
fail:
    plan_release(pl);
    free(pl);
    return NULL;
}

/* prefix sums C[q] = sum of the first q counts, q = 0 .. n */
#define PREFIX_LOOP(T)                                                             \
    {                                                                              \
        const T *cc = (const T *)c;                                                \
        int64_t acc = 0;                                                           \
        for (Py_ssize_t i = 0; i < n; i++) {                                       \
            C[i] = acc;                                                            \
            acc += cc[i];                                                          \
        }                                                                          \
        C[n] = acc;                                                                \
    }

/* sum over read rows (in bound order) of count * (C[lo] + C[hi]); uint8 counts sum in
   int64 per block of 2**16 rows (each term below 2**9 n: exact for n below 2**38) */
#define READ_TERM(I) ((int64_t)cr[perm ? perm[I] : (I)])
#define READ_FN(NAME, T, PART, WIDE)                                               \
static u128                                                                        \
NAME(const T *cr, const int64_t *Co, const int64_t *perm, const int64_t *lo,       \
     const int64_t *hi, Py_ssize_t m)                                              \
{                                                                                  \
    u128 acc = 0;                                                                  \
    for (Py_ssize_t a = 0; a < m; a += BLOCK) {                                    \
        Py_ssize_t e = a + BLOCK < m ? a + BLOCK : m;                              \
        PART part = 0;                                                             \
        if (hi)                                                                    \
            for (Py_ssize_t i = a; i < e; i++)                                     \
                part += (WIDE)READ_TERM(i) * (WIDE)(Co[lo[i]] + Co[hi[i]]);     \
        else                                                                       \
            for (Py_ssize_t i = a; i < e; i++)                                     \
                part += (WIDE)READ_TERM(i) * (WIDE)(2 * Co[lo[i]]);             \
        acc += (u128)part;                                                         \
    }                                                                              \
    return acc;                                                                    \
}

READ_FN(read_u8, uint8_t, uint64_t, uint64_t)
READ_FN(read_u8_wide, uint8_t, u128, u128)
READ_FN(read_i64, int64_t, u128, u128)

PyDoc_STRVAR(split_parts_doc,
"split_parts(plan, counts, C) -> (C_N, C_n, sums)\n\n"
"The integer-count AUC parts of one replicate (bootstrap kernels._split_parts)\n"
"by a :func:`split_plan`: the prefix sums of the layout's ``counts`` (uint8 or\n"
"non-negative int64, n) into int64 ``C`` (n + 1), then per model the exact sum\n"
"over its read rows of count * (C[off + lo] + C[off + hi]). Returns the total\n"
"count of the first N rows, the total count, and the sums as Python ints.");

static PyObject *
py_split_parts(PyObject *self, PyObject *args)
{
    PyObject *po, *co, *Co;
    if (!PyArg_ParseTuple(args, "OOO", &po, &co, &Co))
        return NULL;
    plan_t *pl = (plan_t *)PyCapsule_GetPointer(po, "calipers.split_plan");
    if (!pl)
        return NULL;
    arg_buf b[2] = {{co, 0, 0, "counts"}, {Co, 8, 1, "C"}};
    if (get_bufs(b, 2) < 0)
        return NULL;
    Py_ssize_t n = pl->n, cs = b[0].view.itemsize;
    if (!(cs == 1 || cs == 8) || nitems(&b[0].view) != n || nitems(&b[1].view) < n + 1)
        return refuse(b, 2, "split_parts: counts must be uint8 or int64 of the plan's length, "
                            "C one longer");
    u128 sums[MAX_MODELS];
    int64_t cN, cn;
    Py_BEGIN_ALLOW_THREADS
    int64_t *C = (int64_t *)b[1].view.buf;
    const char *c = (const char *)b[0].view.buf;
    if (cs == 1)
        PREFIX_LOOP(uint8_t)
    else
        PREFIX_LOOP(int64_t)
    cN = C[pl->N];
    cn = C[n];
    for (Py_ssize_t t = 0; t < pl->nm; t++) {
        const int64_t *perm = pl->has_perm[t] ? (const int64_t *)pl->perm[t].buf : NULL;
        const int64_t *lo = (const int64_t *)pl->lo[t].buf;
        const int64_t *hi = pl->has_hi[t] ? (const int64_t *)pl->hi[t].buf : NULL;
        const int64_t *Co = C + pl->off[t];
        if (cs == 1 && n < ((Py_ssize_t)1 << 38))
            sums[t] = read_u8((const uint8_t *)c + pl->r0[t], Co, perm, lo, hi, pl->m[t]);
        else if (cs == 1)
            sums[t] = read_u8_wide((const uint8_t *)c + pl->r0[t], Co, perm, lo, hi, pl->m[t]);
        else
            sums[t] = read_i64((const int64_t *)c + pl->r0[t], Co, perm, lo, hi, pl->m[t]);
    }
    Py_END_ALLOW_THREADS
    release_bufs(b, 2);
    PyObject *res = PyTuple_New(pl->nm);
    if (!res)
        return NULL;
    for (Py_ssize_t t = 0; t < pl->nm; t++) {
        PyObject *v = pylong_u128(sums[t]);
        if (!v) {
            Py_DECREF(res);
            return NULL;
        }
        PyTuple_SET_ITEM(res, t, v);
    }
    return Py_BuildValue("(LLN)", (long long)cN, (long long)cn, res);
}

/* ------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"extremes", py_extremes, METH_VARARGS, extremes_doc},
    {"pack", py_pack, METH_VARARGS, pack_doc},
    {"auc_packed", py_auc_packed, METH_VARARGS, auc_packed_doc},
    {"ap_packed", py_ap_packed, METH_VARARGS, ap_packed_doc},
    {"roc_packed", py_roc_packed, METH_VARARGS, roc_packed_doc},
    {"score_table", py_score_table, METH_VARARGS, score_table_doc},
    {"poisson_draw", py_poisson_draw, METH_VARARGS, poisson_draw_doc},
    {"topup_draw", py_topup_draw, METH_VARARGS, topup_draw_doc},
    {"split_plan", py_split_plan, METH_VARARGS, split_plan_doc},
    {"split_parts", py_split_parts, METH_VARARGS, split_parts_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_native",
    "Compiled single passes behind calipers' NumPy kernels (see calipers._kernels.native).",
    -1, methods
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&moduledef);
}
