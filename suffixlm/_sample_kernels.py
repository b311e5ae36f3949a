"""Drawing sentences from a back-off n-gram model (the distribution of an ARPA file).

At a context h with explicit successors E(h) of total mass S(h), p(w|h) is p(w|h) for
w in E(h) and bow(h) p(w|h') otherwise, h' the back-off context; for a normalised model
the latter is (1 - S(h)) p(w|h') / (1 - sum_{v in E(h)} p(v|h')). So a draw picks an
explicit successor with probability S(h), else draws from h' and rejects words of E(h)
(nested rejection sampling: exact, with no O(V) normalisation per word).
"""

import numpy as np

from ._jit import njit


@njit(cache=True)
def seed(value):
    np.random.seed(value)


@njit(cache=True)
def _find(word, cum_start, cum_end, w):
    """Index of ``w`` among the sorted successor words word[cum_start:cum_end], or -1."""
    lo, hi = cum_start, cum_end
    while lo < hi:
        mid = (lo + hi) >> 1
        if word[mid] < w:
            lo = mid + 1
        else:
            hi = mid
    if lo < cum_end and word[lo] == w:
        return lo
    return -1


@njit(cache=True)
def _pick(cum, start, end, u):
    """First index e in [start, end) with cum[e] > u (cum: cumulative mass of the range)."""
    lo, hi = start, end - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def draw_words(word, cum, succ_start, succ_end, mass, link, is_node, root, start_state, eos,
               n_words, max_tokens, max_tries):
    """Draw whole sentences until at least ``n_words`` words (markers excluded) or
    ``max_tokens`` tokens are out.

    Entries e (all n-grams of all orders, each order sorted): word int32[E] last word,
    cum float64[E] cumulative probability within its context's successors; contexts are
    the entries with ``is_node`` (order < N) and ``root`` (the empty context, id E):
    succ_start/succ_end int64[E+1] their successor range, mass float64[E+1] the explicit
    mass S, link int64[E+1] the entry of the longest proper suffix (root for unigrams).
    Returns (tokens int32[t] words and </s> of each complete sentence, words in them);
    a sentence cut by ``max_tokens`` is dropped."""
    out = np.empty(max_tokens, dtype=np.int32)
    chain = np.empty(64, dtype=np.int64)
    t = 0
    words = 0
    done_t = 0
    done_words = 0
    while done_words < n_words and t < max_tokens:
        state = start_state
        while t < max_tokens:
            # the chain of back-off contexts, longest first
            k = 0
            s = state
            while True:
                chain[k] = s
                k += 1
                if s == root:
                    break
                s = link[s]
            j = 0
            w = -1
            tries = 0
            while True:
                c = chain[j]
                u = np.random.random()
                if u < mass[c] or c == root:
                    if c == root:
                        u = u * mass[c]
                    e = _pick(cum, succ_start[c], succ_end[c], u)
                    w = word[e]
                    restart = -1
                    for i in range(j - 1, -1, -1):
                        if _find(word, succ_start[chain[i]], succ_end[chain[i]], w) >= 0:
                            restart = i + 1
                            break
                    if restart < 0:
                        break
                    tries += 1
                    if tries > max_tries:  # leftover mass is rounding only: take the explicit draw
                        j = 0
                        u = np.random.random() * mass[chain[0]]
                        w = word[_pick(cum, succ_start[chain[0]], succ_end[chain[0]], u)]
                        break
                    j = restart
                else:
                    j += 1
            out[t] = w
            t += 1
            if w == eos and t - 1 == done_t:  # an empty sentence is no sentence (a blank line): redraw
                t -= 1
                continue
            if w == eos:
                done_t = t
                done_words = words
                break
            words += 1
            # next state: the longest suffix of (history, w) that is a context
            s = state
            while True:
                e = _find(word, succ_start[s], succ_end[s], w)
                if e >= 0:
                    state = e if is_node[e] else link[e]
                    break
                if s == root:
                    state = root
                    break
                s = link[s]
    return out[:done_t], done_words
