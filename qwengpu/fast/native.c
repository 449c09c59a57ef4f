/* The fast path's step in C: the circuit layers of a merged model on compact CSR matrices,
 * the same formulas as qwengpu/fast/model.py (whose docstring argues exactness), without
 * the per-op overhead of torch (about 700 small ops a token). Plain IEEE float32: build
 * without -ffast-math and with -ffp-contract=off, so every product and sum rounds as written.
 *
 * Sums run in index order, as a CSR product does; RMS means accumulate in double and round
 * once. Where the circuit's values are exact (integers, powers of two) the order changes
 * nothing; elsewhere (noisy GDN reads) the last bit may differ from torch, which the circuit
 * absorbs (model.py's docstring; the tests compare token streams with the stock path). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int32_t rows, cols;               /* compact shape */
    const int32_t *indptr, *indices;  /* CSR over the compact columns */
    const float *values;
    const int32_t *in_dims;           /* residual dim of each compact column (NULL: the input in order) */
    const float *gain;                /* the norm gain of each compact column (NULL: no norm) */
    const int32_t *out_dims;          /* residual dim of each row (NULL: the output in order) */
} Csr;

/* A matrix by columns: column j's rows and values (rows ascending). */
typedef struct {
    const int32_t *ptr, *rows;
    const float *values;
} Csc;

/* Rows [first, first + rows) of a CSR whose rows all read the same columns `col` (or none): the
 * weights dense, column by column, w[c * rows + r], so a column's products run down the rows. */
typedef struct {
    int32_t first, rows, cols;
    const int32_t *col;
    const float *w;
    int32_t bias;                     /* a column whose input alone, 0 or >= off_from, leaves every row off (-1: none) */
    float off_from;
} Dense;

typedef struct {
    int32_t heads;                    /* used GDN heads (0: no GDN) */
    Csr proj;                         /* per head q, k, v, z rows (2 dk + 2 dv), then b per head */
    const Dense *keys;                /* per head its q rows, then its k rows, dense (rows 0: use proj) */
    Csr out;                          /* gated norm output -> residual */
    const float *norm_w;              /* [dv] */
    int32_t neurons;                  /* live MLP neurons (0: no MLP) */
    Csr gate_up, down;
    Csc gate_by_input;                /* the gate rows by compact input column: a nonzero input's terms */
    Csc down_by_neuron;               /* down's compact columns as columns: an active neuron's outputs */
} Layer;

/* The head's rows in blocks, each with the columns its rows read and, per column, the largest and
 * smallest weight a row of the block has there (0 for a row that lacks it): an upper bound on
 * every logit of the block, so qg_top2 computes only the blocks that can hold the top two. */
typedef struct {
    int32_t blocks;
    const int32_t *first;             /* [blocks + 1] the first row of each block */
    const int32_t *ptr;               /* [blocks + 1] each block's entries in col, hi, lo */
    const int32_t *col;
    const float *hi, *lo;
} Bounds;

typedef struct {
    int32_t N, L, dk, dv;
    float eps;
    const Layer *layers;
    Csr head;                         /* GPU token logits from the residual (final norm gains folded in) */
    Bounds bounds;                    /* the head's row blocks */
} Model;

/* Bit for bit x / (1 + expf(-x)) (checked on every float32): above 17, exp(-x) < 2^-24 and the
 * sum rounds to 1; below -89 (finite), exp(-x) overflows and x / inf is -0. Off neurons sit far
 * below -89, so most calls skip expf and its overflow path. */
static float silu(float x) {
    if (x > 17.0f) return x;
    if (x < -89.0f && x >= -FLT_MAX) return -0.0f;
    return x / (1.0f + expf(-x));
}
static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static float rsqrt(float x) { return 1.0f / sqrtf(x); }

static float rms(const float *x, int32_t n, float eps) {
    double s = 0.0;
    for (int32_t i = 0; i < n; i++)          /* zeros skipped: s + 0 == s, as s is never -0 */
        if (x[i] != 0.0f) s += (double)x[i] * (double)x[i];
    return rsqrt((float)s / (float)n + eps);
}

/* W's input: u[j] = (x[in_dims[j]] * r) * gain[j] (scratch: `u`, cols floats), or x itself. */
static const float *gather(const Csr *w, const float *x, float r, float *u) {
    if (!w->in_dims) return x;
    for (int32_t j = 0; j < w->cols; j++) {
        float v = x[w->in_dims[j]];
        u[j] = w->gain ? (v * r) * w->gain[j] : v;
    }
    return u;
}

static float row_dot(const Csr *w, int32_t i, const float *in) {
    float s = 0.0f;
    for (int32_t k = w->indptr[i]; k < w->indptr[i + 1]; k++) s += w->values[k] * in[w->indices[k]];
    return s;
}

/* y = W u, u as gather() makes it. */
static void product(const Csr *w, const float *x, float r, float *u, float *y) {
    const float *in = gather(w, x, r, u);
    for (int32_t i = 0; i < w->rows; i++) y[i] = row_dot(w, i, in);
}

/* x[out_dims[i]] += (W h)[i] */
static void add_to(const Csr *w, float *x, const float *h, float *u, float *y) {
    product(w, h, 1.0f, u, y);
    for (int32_t i = 0; i < w->rows; i++) x[w->out_dims[i]] += y[i];
}

/* Whether v has at most one nonzero; *at: its index (0 if none). */
static int32_t one_hot(const float *v, int32_t n, int32_t *at) {
    *at = 0;
    int32_t seen = 0;
    for (int32_t i = 0; i < n; i++)
        if (v[i] != 0.0f) {
            if (seen++) return 0;
            *at = i;
        }
    return 1;
}

static void l2norm(float *v, int32_t n) {
    float s = 0.0f;
    for (int32_t i = 0; i < n; i++) s += v[i] * v[i];
    float f = rsqrt(s + 1e-6f);
    for (int32_t i = 0; i < n; i++) v[i] *= f;
}

/* One head's delta rule without decay on S [dk, dv] in place; the read into o [dv].
 * q (unscaled) and k are the silu outputs, modified here; tmp: dv floats. */
void qg_delta_rule(float *S, float *q, float *k, const float *v, float beta, int32_t dk, int32_t dv,
                   float *o, float *tmp) {
    float scale = sqrtf((float)dk);
    int32_t ka, qa;
    if (one_hot(q, dk, &qa) && one_hot(k, dk, &ka)) {
        /* one nonzero: l2norm on it alone, and only its row of S takes part */
        float kv = k[ka], qv = q[qa];
        kv = kv * rsqrt(kv * kv + 1e-6f);
        qv = qv * rsqrt(qv * qv + 1e-6f) / scale;
        float *row = S + (int64_t)ka * dv;
        for (int32_t j = 0; j < dv; j++) row[j] = row[j] + kv * ((v[j] - row[j] * kv) * beta);
        const float *read = S + (int64_t)qa * dv;
        for (int32_t j = 0; j < dv; j++) o[j] = read[j] * qv;
        return;
    }
    l2norm(q, dk);
    l2norm(k, dk);
    for (int32_t r = 0; r < dk; r++) q[r] /= scale;
    for (int32_t j = 0; j < dv; j++) tmp[j] = 0.0f;
    for (int32_t r = 0; r < dk; r++)
        for (int32_t j = 0; j < dv; j++) tmp[j] += S[(int64_t)r * dv + j] * k[r];
    for (int32_t j = 0; j < dv; j++) tmp[j] = (v[j] - tmp[j]) * beta;
    for (int32_t r = 0; r < dk; r++)
        for (int32_t j = 0; j < dv; j++) S[(int64_t)r * dv + j] += k[r] * tmp[j];
    for (int32_t j = 0; j < dv; j++) o[j] = 0.0f;
    for (int32_t r = 0; r < dk; r++)
        for (int32_t j = 0; j < dv; j++) o[j] += S[(int64_t)r * dv + j] * q[r];
}

/* y[i] = silu(row i of W . in) for rows [first, first + n); whether any is nonzero (silu(+-0) is +-0). */
static int32_t silu_rows(const Csr *w, const float *in, int32_t first, int32_t n, float *y) {
    int32_t any = 0;
    for (int32_t i = first; i < first + n; i++) {
        y[i] = row_dot(w, i, in);
        if (y[i] != 0.0f) y[i] = silu(y[i]), any = 1;
    }
    return any;
}

/* Whether a Dense block's rows are all off for this input without summing them: every input but its
 * bias column's is 0, and that one is 0 (each row then sums +-0) or at least off_from (each row's
 * sum is below -89: silu gives -0). The rows are left +0, which every reader takes as 0, and which
 * the stock path's -0 would give too after l2norm (a zero key or query: the head is skipped). */
static int32_t off(const Dense *d, const float *in) {
    for (int32_t c = 0; c < d->cols; c++) {
        float xc = in[d->col[c]];
        if (c == d->bias ? xc != 0.0f && !(xc >= d->off_from) : xc != 0.0f) return 0;
    }
    return 1;
}

/* The same on a Dense block: each row's sum adds its terms in the CSR's order (columns ascending),
 * a row without entries sums only +-0, as row_dot's 0. */
static int32_t silu_dense(const Dense *d, const float *in, float *y) {
    float *out = y + d->first;
    for (int32_t r = 0; r < d->rows; r++) out[r] = 0.0f;
    if (d->bias >= 0 && off(d, in)) return 0;    /* every row +-0: the head's key or query is 0 */
    for (int32_t c = 0; c < d->cols; c++) {
        const float *wc = d->w + (int64_t)c * d->rows, xc = in[d->col[c]];
        if (xc == 0.0f) continue;     /* its terms are +-0 (mlp() says why skipping them is exact) */
        for (int32_t r = 0; r < d->rows; r++) out[r] += wc[r] * xc;
    }
    int32_t any = 0;
    for (int32_t r = 0; r < d->rows; r++)
        if (out[r] != 0.0f) out[r] = silu(out[r]), any = 1;
    return any;
}

/* A head's v and beta rows matter only when it has a key (with k = 0 the update adds +-0) and its
 * z rows only when it has a query (with q = 0 its output is +-0 whatever z is), so they are
 * computed then and left 0 otherwise. */
static void gdn(const Model *m, const Layer *lay, float *S, float *x, float *scratch) {
    int32_t hu = lay->heads, dk = m->dk, dv = m->dv, width = 2 * dk + 2 * dv;
    const Csr *proj = &lay->proj;
    float *y = scratch, *og = y + proj->rows, *tmp = og + hu * dv, *u = tmp + dv;
    const float *in = gather(proj, x, rms(x, m->N, m->eps), u);
    int32_t any = 0;
    for (int32_t h = 0; h < hu; h++)
        for (int32_t part = 0; part < 2; part++) {
            const Dense *d = &lay->keys[2 * h + part];
            any |= d->rows ? silu_dense(d, in, y) : silu_rows(proj, in, h * width + part * dk, dk, y);
        }
    if (!any) return;                 /* no key, no query: S unchanged, the output is 0 */
    memset(og, 0, sizeof(float) * (size_t)(hu * dv));
    for (int32_t h = 0; h < hu; h++) {
        float *q = y + h * width, *k = q + dk, *v = k + dk, *z = v + dv, *o = og + h * dv, *beta = y + hu * width + h;
        int32_t has_k = 0, has_q = 0;
        for (int32_t r = 0; r < dk; r++) has_k |= k[r] != 0.0f, has_q |= q[r] != 0.0f;
        if (!has_k && !has_q) continue;
        memset(v, 0, sizeof(float) * (size_t)(2 * dv));
        *beta = 0.0f;
        if (has_k) silu_rows(proj, in, h * width + 2 * dk, dv, y), *beta = row_dot(proj, hu * width + h, in);
        if (has_q) silu_rows(proj, in, h * width + 2 * dk + dv, dv, y);
        qg_delta_rule(S + (int64_t)h * dk * dv, q, k, v, sigmoid(*beta), dk, dv, o, tmp);
        float f = rms(o, dv, m->eps);
        for (int32_t j = 0; j < dv; j++) o[j] = (lay->norm_w[j] * (o[j] * f)) * silu(z[j]);
    }
    add_to(&lay->out, x, og, u, tmp + dv);
}

/* SwiGLU on the active neurons only. The gates are summed input by input, over the nonzero inputs
 * only (most of a layer's inputs are 0 bits): each gate still adds its terms in the CSR's order
 * (columns ascending), and a skipped term is +-0, which changes no sum: a running sum that starts
 * at +0 is never -0 (round to nearest gives +0 for x + -x and for +0 + -0), and s + +-0 == s for
 * every other s. An off neuron's gate is <= -M (layer.py), so silu gives +-0 and its product +-0:
 * its up row and its terms of the down product are skipped, which changes no sum but the sign of a
 * zero. The down product adds each output's terms in the same order, one active neuron at a time
 * (down's compact columns are the neurons, all of them in order: model.py's Sparse.of(all_cols)). */
static void mlp(const Model *m, const Layer *lay, float *x, float *scratch) {
    const Csr *gu = &lay->gate_up, *down = &lay->down;
    const Csc *gate = &lay->gate_by_input, *by = &lay->down_by_neuron;
    int32_t n = lay->neurons;
    float *h = scratch, *y = h + n, *u = y + down->rows;
    const float *in = gather(gu, x, rms(x, m->N, m->eps), u);
    memset(h, 0, sizeof(float) * (size_t)n);
    for (int32_t j = 0; j < gu->cols; j++) {
        float xj = in[j];
        if (xj == 0.0f) continue;
        for (int32_t k = gate->ptr[j]; k < gate->ptr[j + 1]; k++) h[gate->rows[k]] += gate->values[k] * xj;
    }
    memset(y, 0, sizeof(float) * (size_t)down->rows);
    for (int32_t i = 0; i < n; i++) {
        float a = silu(h[i]);
        float hi = a == 0.0f ? 0.0f : a * row_dot(gu, n + i, in);
        if (hi == 0.0f) continue;
        for (int32_t k = by->ptr[i]; k < by->ptr[i + 1]; k++) y[by->rows[k]] += by->values[k] * hi;
    }
    for (int32_t r = 0; r < down->rows; r++) x[down->out_dims[r]] += y[r];
}

/* Floats of scratch one call of qg_hidden needs. */
int64_t qg_scratch_floats(const Model *m) {
    int64_t most = m->head.rows + m->head.cols + m->bounds.blocks;
    for (int32_t l = 0; l < m->L; l++) {
        const Layer *lay = &m->layers[l];
        int64_t g = lay->heads ? (int64_t)lay->proj.rows + (int64_t)lay->heads * m->dv + m->dv
                                 + lay->proj.cols + lay->out.cols + lay->out.rows : 0;
        int64_t f = lay->neurons ? (int64_t)lay->neurons + lay->down.rows + lay->gate_up.cols : 0;
        if (g > most) most = g;
        if (f > most) most = f;
    }
    return most;
}

/* Rows [first, end) of the residuals x [B, N] through the circuit layers, in place; states[l]
 * is layer l's [B, heads, dk, dv] (row b: launch b). Rows never mix, so disjoint row ranges
 * may run in parallel, each with its own scratch. */
void qg_hidden(const Model *m, float *const *states, int32_t first, int32_t end, float *x, float *scratch) {
    for (int32_t b = first; b < end; b++) {
        float *xb = x + (int64_t)b * m->N;
        for (int32_t l = 0; l < m->L; l++) {
            const Layer *lay = &m->layers[l];
            if (lay->heads)
                gdn(m, lay, states[l] + (int64_t)b * lay->heads * m->dk * m->dv, xb, scratch);
            if (lay->neurons) mlp(m, lay, xb, scratch);
        }
    }
}

/* (v, t) into the best two (v1, i1), (v2, i2): the larger logit first, the lower index on a tie, as
 * a scan of every row in order finds them. */
static void rank(float v, int32_t t, float *v1, int32_t *i1, float *v2, int32_t *i2) {
    if (*i1 < 0 || v > *v1 || (v == *v1 && t < *i1)) {
        *v2 = *v1, *i2 = *i1, *v1 = v, *i1 = t;
    } else if (*i2 < 0 || v > *v2 || (v == *v2 && t < *i2)) {
        *v2 = v, *i2 = t;
    }
}

/* Each block's bound on its logits (in double, then raised past any float rounding of the sums);
 * 0 when a bound is not finite: then every row is computed. */
static int32_t block_bounds(const Bounds *bd, const float *in, float *bound) {
    for (int32_t b = 0; b < bd->blocks; b++) {
        double s = 0.0, size = 0.0;
        for (int32_t k = bd->ptr[b]; k < bd->ptr[b + 1]; k++) {
            double x = in[bd->col[k]], a = bd->hi[k] * x, c = bd->lo[k] * x;
            s += a > c ? a : c;
            size += fabs(a) > fabs(c) ? fabs(a) : fabs(c);
        }
        bound[b] = (float)(s + 1e-4 * size + 1e-6);
        if (!isfinite(bound[b])) return 0;
    }
    return 1;
}

/* Per row of x [B, N]: the best and second GPU-token logits and their indices. The blocks go
 * in the order of their bounds; once a bound is below the second logit so far, no row left can
 * change the two, so the answer is that of scanning every row. */
void qg_top2(const Model *m, int32_t batch, const float *x, float *scratch, float *top, int32_t *at) {
    const Csr *w = &m->head;
    const Bounds *bd = &m->bounds;
    float *u = scratch, *bound = u + w->cols;
    for (int32_t b = 0; b < batch; b++) {
        const float *in = gather(w, x + (int64_t)b * m->N, 1.0f, u);
        float v1 = -INFINITY, v2 = -INFINITY;
        int32_t i1 = -1, i2 = -1;
        if (bd->blocks && block_bounds(bd, in, bound)) {
            for (;;) {
                int32_t next = -1;
                for (int32_t k = 0; k < bd->blocks; k++)
                    if (bound[k] > -INFINITY && (next < 0 || bound[k] > bound[next])) next = k;
                if (next < 0 || (i2 >= 0 && bound[next] < v2)) break;
                bound[next] = -INFINITY;
                for (int32_t t = bd->first[next]; t < bd->first[next + 1]; t++)
                    rank(row_dot(w, t, in), t, &v1, &i1, &v2, &i2);
            }
        } else {
            for (int32_t t = 0; t < w->rows; t++) rank(row_dot(w, t, in), t, &v1, &i1, &v2, &i2);
        }
        top[2 * b] = v1;
        at[2 * b] = i1;
        top[2 * b + 1] = i2 < 0 ? -INFINITY : v2;
        at[2 * b + 1] = i2 < 0 ? i1 : i2;
    }
}
