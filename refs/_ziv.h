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
 *   while (_qf_ziv_next(&z)) {           one attempt at z.w
 *       if (_qf_ziv_raised(&z))
 *           ...set the temporaries to z.w...
 *       ...evaluate, then for each still undecided element:
 *       _qf_ziv_done(&z, sink, i, &enclosure);
 *   }
 *
 * The precisions follow _qf_next_prec (w0, then doubling up to wmax), so
 * the sequence tried and every decision are those of the loops this
 * replaces.  An element still undecided at wmax is written as a guess
 * (UNDECIDED) and does not ask for another attempt.
 */
#ifndef QF__ZIV_H
#define QF__ZIV_H

#include "_ref.h"

typedef struct _qf_ziv {
    const _qf_rctx *c;
    mpfr_prec_t w; /* precision of the current (or last) attempt */
    int last;      /* w is wmax: undecided elements are guessed */
    int pending;   /* some element asked for another attempt */
    int tries;     /* attempts begun */
} _qf_ziv;

static inline void _qf_ziv_init(_qf_ziv *z, const _qf_rctx *c, mpfr_prec_t w0)
{
    z->c = c;
    z->w = w0;
    z->last = 0;
    z->pending = 0;
    z->tries = 0;
}

/* 1 when an attempt at z->w is to be made: always the first time, then
 * only when the previous attempt left an element pending (w raised). */
static inline int _qf_ziv_next(_qf_ziv *z)
{
    if (z->tries > 0) {
        if (!z->pending)
            return 0;
        z->w = _qf_next_prec(z->c, z->w);
    }
    z->tries++;
    z->pending = 0;
    z->last = z->w >= z->c->wmax;
    return 1;
}

/* 1 when this attempt runs at a higher precision than the one before, so
 * temporaries created at the previous w need _qf_iv_set_prec. */
static inline int _qf_ziv_raised(const _qf_ziv *z)
{
    return z->tries > 1;
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
