/* _ziv.h: the Ziv loop shared by the references in refs/ (not installed).
 *
 * Every reference evaluates a rigorous enclosure at a working precision w,
 * rounds it when both ends round alike, and otherwise tries again at a
 * higher w, following Ziv's strategy (A. Ziv, "Fast evaluation of
 * elementary mathematical functions with correctly rounded last bit", ACM
 * TOMS 17(3), 1991; the MPFR manual's "Ziv's loop", MPFR_ZIV_* in its
 * sources).  Only the evaluation differs from one op to the next; the
 * bookkeeping below is the same everywhere:
 *
 *   _qf_ziv z;
 *   _qf_ziv_init(&z, c, w0);
 *   _qf_ziv_track(&z, temporaries, n);   ...as many as the evaluation uses
 *   while (_qf_ziv_next(&z)) {           one attempt at z.w
 *       ...evaluate, then for each still undecided element:
 *       _qf_ziv_done(&z, sink, i, &enclosure);
 *   }
 *
 * The precisions follow _qf_next_prec (w0, then doubling up to wmax), so
 * the sequence tried and every decision are those of the loops this
 * replaces.  An element still undecided at wmax is written as a guess
 * (UNDECIDED) and does not ask for another attempt.  Each attempt starts
 * with every tracked temporary at z.w (those at another precision are
 * set to it, which loses their value: the evaluation recomputes them).
 * Element-wise references call _qf_ziv_start for each element.
 */
#ifndef QF__ZIV_H
#define QF__ZIV_H

#include <assert.h>
#include <stdarg.h>

#include "_ref.h"

/* The most arrays of temporaries one loop tracks (rope: 9). */
#define _QF_ZIV_SPANS 12

typedef struct _qf_ziv {
    const _qf_rctx *c;
    mpfr_prec_t w; /* precision of the current (or last) attempt */
    int last;      /* w is wmax: undecided elements are guessed */
    int pending;   /* some element asked for another attempt */
    int tries;     /* attempts begun */
    struct {
        _qf_iv *v;
        size_t n;
    } span[_QF_ZIV_SPANS]; /* tracked interval temporaries */
    int nspan;
    mpfr_ptr scratch; /* one tracked plain MPFR temporary, or NULL */
} _qf_ziv;

/* A new loop at w0 over the same tracked temporaries. */
static inline void _qf_ziv_start(_qf_ziv *z, mpfr_prec_t w0)
{
    z->w = w0;
    z->last = 0;
    z->pending = 0;
    z->tries = 0;
}

static inline void _qf_ziv_init(_qf_ziv *z, const _qf_rctx *c, mpfr_prec_t w0)
{
    z->c = c;
    z->nspan = 0;
    z->scratch = NULL;
    _qf_ziv_start(z, w0);
}

/* v[0..n) follow the working precision (n may be 0). */
static inline void _qf_ziv_track(_qf_ziv *z, _qf_iv *v, size_t n)
{
    assert(z->nspan < _QF_ZIV_SPANS);
    z->span[z->nspan].v = v;
    z->span[z->nspan].n = n;
    z->nspan++;
}

/* n single temporaries, given as _qf_iv pointers. */
static inline void _qf_ziv_track_each(_qf_ziv *z, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    while (n-- > 0)
        _qf_ziv_track(z, va_arg(ap, _qf_iv *), 1);
    va_end(ap);
}

static inline void _qf_ziv_track_mpfr(_qf_ziv *z, mpfr_ptr x)
{
    z->scratch = x;
}

/* 1 when an attempt at z->w is to be made: always the first time, then
 * only when the previous attempt left an element pending (w raised).  The
 * tracked temporaries are at z->w when it returns 1. */
static inline int _qf_ziv_next(_qf_ziv *z)
{
    size_t i;
    int k;
    if (z->tries > 0) {
        if (!z->pending)
            return 0;
        z->w = _qf_next_prec(z->c, z->w);
    }
    z->tries++;
    z->pending = 0;
    z->last = z->w >= z->c->wmax;
    for (k = 0; k < z->nspan; k++)
        for (i = 0; i < z->span[k].n; i++)
            if (mpfr_get_prec(z->span[k].v[i].lo) != z->w)
                _qf_iv_set_prec(&z->span[k].v[i], z->w);
    if (z->scratch && mpfr_get_prec(z->scratch) != z->w)
        mpfr_set_prec(z->scratch, z->w);
    return 1;
}

/* Element i from the enclosure v: 1 when it is written (decided, or
 * guessed at the last precision), 0 when it needs another attempt. */
static inline int _qf_ziv_done(_qf_ziv *z, _qf_sink *s, size_t i, const _qf_iv *v)
{
    if (_qf_sink_decide(s, i, v))
        return 1;
    if (z->last) {
        _qf_sink_guess(s, i, v);
        return 1;
    }
    z->pending = 1;
    return 0;
}

/* Something other than an element (an order between keys) is not proven
 * at this w: ask for another attempt unless w is already the last. */
static inline void _qf_ziv_retry(_qf_ziv *z)
{
    if (!z->last)
        z->pending = 1;
}

#endif
