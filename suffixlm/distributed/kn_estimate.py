"""Kneser-Ney estimation on a Dask cluster, where the counts live (``suffixlm kn --workers``).

After ``distributed.kn_counts``'s keyed shuffle, partition p holds, for every order n >= 2, the
n-grams whose first word lies in the word range [lo_p, hi_p), sorted. An n-gram's
prefix (its context) has the same first word, so all that SRILM computes per context
is local to a partition: the context totals and gamma, the probabilities
(``_kn_kernels.estimate_order``), the back-off weights (``backoff_weights``), the
fix-up marks along prefixes. What crosses partitions is the suffix (the n-gram without
its first word), which lives in the partition of the second word:

* pulled: the suffix's (found, acc) back-off values (the interpolation's lower-order
  probability and the back-off walk), by the suffix's index in its partition, which
  is looked up once per order: where the partitions were counted over the whole text,
  as the id the suffix's partition gives the (n-1)-gram ending where the n-gram ends
  (``_ids_at``); after the keyed shuffle, by the join by suffix key (``_resolve``: a
  hash table of the suffixes' partition, built once per order);
* pushed: continuation counts (distinct left extensions, the KN counts below the top
  order) and the context-node marks, added up where the suffix lives.

Counts-of-counts are a small global reduction (five integers per order and partition),
summed on the driver, which also holds the unigram level (vocabulary-sized arrays).
Every value comes from the same element-wise float32 operations as in the
single-process ``kn.estimate_kneser_ney``, so the ARPA file is byte-identical. The
driver writes it in order, one partition of one order at a time, and never holds the
model (``ClusterKN.write_arpa``); ``ClusterKN.model()`` gathers it for the Python API.
Every task is a pure function of its inputs, so a lost worker costs only the
recomputation of its tasks.
"""

from __future__ import annotations

import uuid

import numpy as np

from ..backoff import kn_steps as steps
from ..corpus import BOS_ID, UNK_ID, Vocabulary
from .spill import projection

# ---------------------------------------------------------------- tasks (pure functions)


@projection
def _item(t, i):
    return t[i]


def _setup(merged, prev_rows, lo: int):
    """One order n of a merged partition: (rows, count int32, prefix, size); prefix: the
    local index of the context among ``prev_rows``, the partition's (n-1)-grams (None
    for n = 2: the first word - lo), unless ``merged`` brings it for n > 2
    (``count_partition``'s trie), checked then: within the level below, not decreasing."""
    from . import _merge_kernels as M

    rows, cnt = merged[:2]
    n = rows.shape[1]
    if prev_rows is None:
        prefix = (rows[:, 0] - lo).astype(np.int32)
    elif len(merged) > 2:
        prefix = np.asarray(merged[2], dtype=np.int32)
        if len(prefix) != len(rows) or (len(prefix) and (prefix[0] < 0 or prefix[-1] >= len(prev_rows)
                                                         or np.any(prefix[1:] < prefix[:-1]))):
            raise ValueError(f"order {n}: the contexts' indices do not index the partition's {n - 1}-grams in order")
    else:
        prefix = M.find_rows(prev_rows, np.ascontiguousarray(rows[:, :-1]))
    return rows, steps.check_int32_counts(cnt, n), prefix, len(rows)


@projection
def _rows_of(merged):
    return merged[0]


def _suffix_split(rows: np.ndarray, bounds: np.ndarray):
    """Per partition q: the positions of the n-grams whose suffix lives in q (second word
    in q's range), in their order (``_merge_kernels.group_by_range``: a counting sort)."""
    from . import _merge_kernels as M

    order, cut = M.group_by_range(rows[:, 1], bounds)
    return [order[cut[p]:cut[p + 1]] for p in range(len(bounds) - 1)]


def _suffix_rows(rows: np.ndarray, sel: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows[sel, 1:])


def _take(a: np.ndarray, sel: np.ndarray) -> np.ndarray:
    return a[sel]


def _ids_at(ends: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Local indices of the n-grams of a partition ending at ``positions`` (``ends``: its
    id of the n-gram ending at each position of the text)."""
    from . import _merge_kernels as M

    return M.ids_at(ends, positions)


def _row_slots(table: np.ndarray) -> np.ndarray:
    from . import _merge_kernels as M

    return M.row_slots(table)


def _resolve(suffixes: np.ndarray, table: np.ndarray, slots: np.ndarray):
    """Local indices of the suffixes in their partition's rows of their order, ``table``
    (``slots``: its hash table, built once for the suffixes of every partition)."""
    from . import _merge_kernels as M

    return M.find_rows_hashed(table, slots, suffixes)


def _kn_counts(count, rows, nonevent, *idx):
    """SRILM's KN counts of an order below the top: the number of distinct (n+1)-grams
    ending in the n-gram (``idx``: the suffix indices of the (n+1)-grams of every
    partition whose suffix lives here), raw counts for n-grams starting with a non-event."""
    from . import _merge_kernels as M

    cc = np.zeros(len(count), dtype=np.int32)
    for i in idx:  # counted in place: a bincount per partition made two arrays of the level's size each
        M.count_into(cc, i)
    return np.where(nonevent[rows[:, 0]], count, cc)


def _second_words(rows: np.ndarray, V: int) -> np.ndarray:
    return np.bincount(rows[:, 1], minlength=V).astype(np.int32)


def _coc(kn, rows, nonevent):
    return steps.count_of_counts(kn, np.ascontiguousarray(rows[:, -1]), nonevent)


def _suffix_values(rows, found1, acc1, sels, *pieces):
    """The suffixes' (found, acc), aligned with ``rows``: bigrams index the unigram level
    (``found1``, ``acc1``), higher orders assemble what their suffixes' partitions sent."""
    from . import _merge_kernels as M

    if found1 is not None:
        return found1[rows[:, 1]], acc1[rows[:, 1]]
    found, acc = np.empty(len(rows), dtype=np.float32), np.empty(len(rows), dtype=np.float32)
    for sel, pairs in zip(sels, pieces):  # the partitions' positions: every one exactly once
        M.scatter_pairs(found, acc, sel, pairs)
    return found, acc


def _pack(found, acc):
    """(found, acc) side by side, float32[m, 2] (``_merge_kernels.pack_pairs``): a pull
    reads one line for the pair of an n-gram where two arrays took two."""
    from . import _merge_kernels as M

    return M.pack_pairs(found, acc)


def _take_found_acc(fa, idx):
    """The (found, acc) pairs (``_pack``'s) of the n-grams ``idx``: float32[len(idx), 2]."""
    from . import _merge_kernels as M

    return M.gather(fa.view(np.int64).reshape(-1), idx).view(np.float32).reshape(-1, 2)


def _forward(rows, prefix, kn, n_ctx, ctx_unk, params, found_s, acc_s, top):
    """First pass over an order: probabilities, the contexts' back-off weights, the
    back-off walk (as ``kn.estimate_kneser_ney``; ``_pack``ed, None at the ``top`` order,
    whose walk no order above reads); ``ctx_unk``: contexts holding a closed-vocabulary
    <unk> (None in an open vocabulary)."""
    from ..backoff import _kn_kernels as K

    nonevent, min_count, d, vocab_size, interpolate = params
    word = np.ascontiguousarray(rows[:, -1])
    lower = K.lower_order_lp(found_s, acc_s, None)
    start, end = steps.context_ranges(prefix, n_ctx)
    skip = ctx_unk if ctx_unk is not None else np.zeros(n_ctx, dtype=bool)
    lp, explicit, n_retry = K.estimate_order(start, end, skip, kn, word, lower, nonevent, min_count,
                                             float(d[0]), float(d[1]), float(d[2]), vocab_size, interpolate, False)
    bow_ctx, n_bad = K.backoff_weights(start, end, explicit, lp, lower)
    fa = None if top else _pack(*steps.walk_step(found_s, acc_s, bow_ctx, prefix, lp, explicit))
    unk = (ctx_unk[prefix] | (word == UNK_ID)) if ctx_unk is not None else None
    return lp, explicit, fa, bow_ctx, unk, int(n_retry), int(n_bad)


def _fixup_forward(lp, explicit, bow_ctx, prefix, mark, found_s, acc_s):
    """Second pass over an order: the back-off walk through the fixed-up lower order
    (``_pack``ed), then SRILM's fix-ups of this order's marked n-grams (``mark`` None: the
    top order, which has none and whose walk no order above reads: nothing to do)."""
    if mark is None:
        return lp, explicit, None, 0
    found, acc = steps.walk_step(found_s, acc_s, bow_ctx, prefix, lp, explicit)
    fix = mark & ~explicit
    n_fix = int(fix.sum())
    if n_fix:
        lp, explicit = lp.copy(), explicit.copy()
        steps.fixup_order(lp, explicit, found, acc, fix)
    return lp, explicit, _pack(found, acc), n_fix


def _marked_suffixes(node, sel, idx):
    """The suffix indices (in the suffixes' partition) of the marked n-grams."""
    return idx[node[sel]]


def _nodes(m: int, prefix_up, explicit_up, *marked):
    """Context nodes of an order: the prefixes of explicit (n+1)-grams and the suffixes of
    (n+1)-gram nodes (``marked``: their indices here, from every partition)."""
    node = np.zeros(m, dtype=bool)
    node[prefix_up[explicit_up]] = True
    for i in marked:
        node[i] = True
    return node


def _unigram_nodes(rows2, explicit2, node2):
    """The unigram nodes one partition marks (word ids): first words of explicit bigrams,
    and second words of bigram nodes."""
    ids = [rows2[explicit2, 0]]
    if node2 is not None:
        ids.append(rows2[node2, 1])
    return np.unique(np.concatenate(ids))


def _marks(node, prefix_up, mark_up):
    """Fix-up marks of an order: its nodes, and the prefixes of marked (n+1)-grams."""
    mark = node.copy()
    if mark_up is not None:
        mark[prefix_up[mark_up]] = True
    return mark


def _output(rows, lp, explicit, bow, node):
    """What the ARPA file lists of an order's n-grams of one partition: ((rows, log10 p,
    back-off weight, has back-off weight), as read back from ``%.7g``; (n-grams, back-off
    weights)), the sizes apart so that counting them reads none of the piece."""
    idx = np.flatnonzero(explicit)
    piece = steps.arpa_entries(np.ascontiguousarray(rows[idx]), lp, bow, node, idx)
    return piece, (len(idx), int(piece[3].sum()))


# ---------------------------------------------------------------- the driver


class ClusterKN:
    """An interpolated KN model estimated on the cluster from ``distributed.kn_counts``'s merged
    partitions; its n-grams stay on the workers until written or gathered.

    unigrams: int64[V] raw unigram counts; merged: per partition, futures of
    ``distributed.kn_counts.merge_pieces`` for orders 2..N (partition p: n-grams whose
    first word id is in [bounds[p], bounds[p+1])), or of ``count_partition``'s tuples
    when ``linked``: then each n-gram's suffix is found where the n-gram ends in the
    text (``_links``), not by a join on its words;
    progress: None, or a function called with a line at the end of each stage."""

    def __init__(self, client, unigrams: np.ndarray, merged: list, bounds: np.ndarray, order: int,
                 vocab: Vocabulary, modified: bool = True, min_counts: list[int] | None = None,
                 interpolate: bool = True, progress=None, linked: bool = False):
        self.client = client
        self.progress = progress or (lambda message: None)
        self.tag = uuid.uuid4().hex[:8]
        self._k = 0
        self.vocab = vocab
        self.order = N = order
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.P = P = len(self.bounds) - 1
        self.V = V = len(unigrams)
        if min_counts is None:
            min_counts = steps.srilm_min_counts(N)
        self.min_counts = list(min_counts) + [min_counts[-1]] * (N - len(min_counts))
        nonevent = np.zeros(V, dtype=bool)
        nonevent[BOS_ID] = True
        if not vocab.has_unk:
            nonevent[UNK_ID] = True
        self.nonevent = nonevent
        self.closed = not vocab.has_unk
        self.vocab_size = int(V - nonevent.sum())
        self.modified, self.interpolate = modified, interpolate
        self.linked = linked
        raw1 = steps.check_int32_counts(np.asarray(unigrams), 1)
        F: dict = {}
        self.F = F
        self.m = {}
        for p in range(P):
            for j in range(N - 1):
                n = j + 2
                prev = None if n == 2 else self._submit(_rows_of, merged[p][j - 1], name=f"prev-{p}-{n}")
                parts = self._split(self._submit(_setup, merged[p][j], prev, int(self.bounds[p]),
                                                 name=f"setup-{p}-{n}"), 4, f"setup-{p}-{n}")
                F["rows", p, n], F["count", p, n], F["prefix", p, n], self.m[p, n] = parts
                if linked:  # where an occurrence of each n-gram ends; the ids ending at each position
                    F["pos", p, n] = self._submit(_item, merged[p][j], 3, name=f"pos-{p}-{n}")
                    if n < N:
                        F["ends", p, n] = self._submit(_item, merged[p][j], 4, name=f"ends-{p}-{n}")
            merged[p] = None
        merged.clear()
        sizes = client.gather([self.m[k] for k in self.m])
        self.m = dict(zip(list(self.m), (int(s) for s in sizes)))
        self.progress(f"n-grams merged in {P} partition(s): "
                      f"{[V] + [sum(self.m[p, n] for p in range(P)) for n in range(2, N + 1)]}")
        self._links()
        self._estimate(raw1)

    # -------------------------------------------------- plumbing
    def _submit(self, fn, *args, name: str, near=None):
        """Submit a task; ``near``: a future whose worker should run it (a soft wish: any
        worker may, if that one is gone)."""
        self._k += 1
        where = {}
        if near is not None:
            holders = self.client.who_has([near]).get(near.key)
            if holders:
                where = {"workers": list(holders), "allow_other_workers": True}
        return self.client.submit(fn, *args, key=f"kn-est-{self.tag}-{name}-{self._k}", **where)

    def _split(self, f, n_out: int, name: str) -> list:
        return [self._submit(_item, f, i, name=f"{name}-{i}") for i in range(n_out)]

    def _lo_hi(self, p):
        return int(self.bounds[p]), int(self.bounds[p + 1])

    def _links(self) -> None:
        """For n >= 3, partitions p, q: the positions ``sel`` of p's n-grams whose suffix
        lives in q, and the suffixes' indices ``idx`` in q: read in q's ids of the
        (n-1)-grams ending at each position of the text, at where each n-gram ends, when
        the partitions bring them (``linked``), else found by the join by suffix key."""
        F, P = self.F, self.P
        linked = self.linked
        for n in range(3, self.order + 1):
            slots = None if linked else [self._submit(_row_slots, F["rows", q, n - 1], name=f"slots-{q}-{n}",
                                                      near=F["rows", q, n - 1]) for q in range(P)]
            for p in range(P):
                sels = self._split(self._submit(_suffix_split, F["rows", p, n], self.bounds, name=f"sel-{p}-{n}"),
                                   P, f"sel-{p}-{n}")
                for q in range(P):
                    F["sel", p, q, n] = sels[q]
                    # the suffixes (or where they end) travel to their partition, not its rows to them
                    if linked:
                        piece = self._submit(_take, F["pos", p, n], sels[q], name=f"sufpos-{p}-{q}-{n}")
                        F["idx", p, q, n] = self._submit(_ids_at, F["ends", q, n - 1], piece,
                                                         name=f"idx-{p}-{q}-{n}", near=F["ends", q, n - 1])
                    else:
                        piece = self._submit(_suffix_rows, F["rows", p, n], sels[q], name=f"sufrows-{p}-{q}-{n}")
                        F["idx", p, q, n] = self._submit(_resolve, piece, F["rows", q, n - 1], slots[q],
                                                         name=f"idx-{p}-{q}-{n}", near=F["rows", q, n - 1])
            del slots
        for key in [k for k in F if k[0] in ("pos", "ends")]:  # freed once the links are made
            del F[key]

    def _suffix_values(self, p: int, n: int, found1, acc1):
        """Future of the (found, acc) of the suffixes of p's n-grams."""
        F = self.F
        if n == 2:
            return self._submit(_suffix_values, F["rows", p, n], found1, acc1, None, name=f"sv-{p}-{n}")
        pieces = [self._submit(_take_found_acc, F["fa", q, n - 1], F["idx", p, q, n], name=f"pull-{p}-{q}-{n}")
                  for q in range(self.P)]
        sels = [F["sel", p, q, n] for q in range(self.P)]
        return self._submit(_suffix_values, F["rows", p, n], None, None, sels, *pieces, name=f"sv-{p}-{n}")

    # -------------------------------------------------- the estimate
    def _estimate(self, raw1: np.ndarray) -> None:

        client, F, P, N, V = self.client, self.F, self.P, self.order, self.V
        nonevent = self.nonevent
        info: dict = {"discounts": [], "count_of_counts": [], "retries": [], "bad_bows": [], "fixups": []}
        self.info = info
        # KN counts: continuation counts, pushed to where the suffix lives
        if N == 1:
            kn1 = raw1
        else:
            cc = np.zeros(V, dtype=np.int32)
            for c in client.gather([self._submit(_second_words, F["rows", p, 2], V, name=f"cc1-{p}")
                                    for p in range(P)]):
                cc += c
            kn1 = np.where(nonevent, raw1, cc)
        for n in range(2, N + 1):
            for q in range(P):
                if n == N:
                    F["kn", q, n] = F["count", q, n]
                else:
                    F["kn", q, n] = self._submit(_kn_counts, F["count", q, n], F["rows", q, n], nonevent,
                                                 *[F["idx", p, q, n + 1] for p in range(P)], name=f"kn-{q}-{n}")
        # counts-of-counts: a small global reduction; discounts on the driver
        cocs = [steps.count_of_counts(kn1, np.arange(V, dtype=np.int32), nonevent)]
        futures = {(p, n): self._submit(_coc, F["kn", p, n], F["rows", p, n], nonevent, name=f"coc-{p}-{n}")
                   for n in range(2, N + 1) for p in range(P)}
        got = dict(zip(futures, client.gather(list(futures.values()))))
        for n in range(2, N + 1):
            cocs.append(sum(got[p, n] for p in range(P)))
        discounts = []
        for n in range(1, N + 1):
            size = V if n == 1 else sum(self.m[p, n] for p in range(P))
            d = steps.estimate_discounts(cocs[n - 1], self.modified, n) if size else (0.5, 1.0, 1.5)
            info["count_of_counts"].append([int(x) for x in cocs[n - 1][1:]])
            info["discounts"].append(d)
            discounts.append(d)
        # unigrams, here
        lp1, explicit1, n_retry = steps.estimate_unigrams(kn1, nonevent, int(self.min_counts[0]), discounts[0],
                                                    self.vocab_size, bool(self.interpolate))
        info["retries"].append(n_retry)
        info["bad_bows"].append(0)
        found1, acc1 = lp1.copy(), np.zeros(V, dtype=np.float32)
        bow1 = np.zeros(V, dtype=np.float32)
        # first pass, order by order: probabilities, back-off weights, the walk
        for n in range(2, N + 1):
            params = (nonevent, int(self.min_counts[n - 1]), discounts[n - 1], self.vocab_size,
                      bool(self.interpolate))
            outs = []
            for p in range(P):
                lo, hi = self._lo_hi(p)
                if n == 2:
                    n_ctx = hi - lo
                    ctx_unk = (np.arange(lo, hi) == UNK_ID) if self.closed else None
                else:
                    n_ctx = self.m[p, n - 1]
                    ctx_unk = F["unk", p, n - 1] if self.closed else None
                sv = self._suffix_values(p, n, found1, acc1)
                fs, acs = self._split(sv, 2, f"svs-{p}-{n}")
                t = self._submit(_forward, F["rows", p, n], F["prefix", p, n], F["kn", p, n], n_ctx, ctx_unk,
                                 params, fs, acs, n == N, name=f"fwd-{p}-{n}")
                (F["lp", p, n], F["explicit", p, n], F["fa", p, n], bow_ctx, F["unk", p, n],
                 retry, bad) = self._split(t, 7, f"fwd-{p}-{n}")
                if n == 2:
                    F["bow1", p] = bow_ctx
                else:
                    F["bow", p, n - 1] = bow_ctx
                outs.append((retry, bad))
            for p in range(P):
                F.pop(("kn", p, n), None)
                if n >= 3:
                    F.pop(("fa", p, n - 1), None)
            res = client.gather(outs)
            self.progress(f"order {n}: probabilities and back-off weights")
            info["retries"].append(sum(r for r, _ in res))
            info["bad_bows"].append(sum(b for _, b in res))
        for p in range(P):
            if N >= 2:
                lo, hi = self._lo_hi(p)
                bow1[lo:hi] = F["bow1", p].result()
            F.pop(("fa", p, N), None)
        self._nodes(N)
        # fix-ups: marks along prefixes, then the walk again through the fixed-up orders
        for n in range(N - 1, 1, -1):
            for p in range(P):
                up = F.get(("mark", p, n + 1))
                F["mark", p, n] = self._submit(_marks, F["node", p, n], F["prefix", p, n + 1], up,
                                               name=f"mark-{p}-{n}")
        info["fixups"].append(0)
        for n in range(2, N + 1):
            fix_counts = []
            for p in range(P):
                bow_ctx = F["bow1", p] if n == 2 else F["bow", p, n - 1]
                mark = F["mark", p, n] if n < N else None
                sv = self._suffix_values(p, n, found1, acc1)
                fs, acs = self._split(sv, 2, f"svf-{p}-{n}")
                t = self._submit(_fixup_forward, F["lp", p, n], F["explicit", p, n], bow_ctx, F["prefix", p, n],
                                 mark, fs, acs, name=f"fix-{p}-{n}")
                F["lp", p, n], F["explicit", p, n], F["fa", p, n], nfix = self._split(t, 4, f"fix-{p}-{n}")
                fix_counts.append(nfix)
            for p in range(P):
                F.pop(("mark", p, n), None)
                if n >= 3:
                    F.pop(("fa", p, n - 1), None)
            info["fixups"].append(0 if n == N else sum(client.gather(fix_counts)))
            self.progress(f"order {n}: fix-ups")
        for p in range(P):
            F.pop(("fa", p, N), None)
        for key in [k for k in F if k[0] == "node"]:
            del F[key]
        node1 = self._nodes(N)
        # what the file lists
        idx = steps.listed_unigrams(explicit1, nonevent)
        self.unigrams = (idx.astype(np.int32).reshape(-1, 1), steps.quantize_g7(lp1[idx]),
                         steps.quantize_g7(bow1[idx]), node1[idx] if N > 1 else np.zeros(len(idx), dtype=bool))
        self.out = {}
        out_sizes = {}
        for n in range(2, N + 1):
            for p in range(P):
                bow = F["bow", p, n] if n < N else None
                node = F["node", p, n] if n < N else None
                t = self._submit(_output, F["rows", p, n], F["lp", p, n], F["explicit", p, n], bow, node,
                                 name=f"out-{p}-{n}")
                self.out[p, n], out_sizes[p, n] = self._split(t, 2, f"out-{p}-{n}")
        sizes = client.gather(out_sizes)
        del out_sizes
        self.counts = [len(self.unigrams[0])] + [sum(sizes[p, n][0] for p in range(P)) for n in range(2, N + 1)]
        self.n_parameters = sum(self.counts) + int(self.unigrams[3].sum()) + sum(b for _, b in sizes.values())
        F.clear()

    def _nodes(self, N: int) -> np.ndarray:
        """Context nodes of orders 1..N-1 from the current ``explicit`` (``F['node', p, n]``
        for n >= 2; returned for the unigrams)."""
        F, P = self.F, self.P
        for n in range(N - 1, 1, -1):
            for q in range(P):
                marked = []
                if n < N - 1:
                    marked = [self._submit(_marked_suffixes, F["node", p, n + 1], F["sel", p, q, n + 1],
                                           F["idx", p, q, n + 1], name=f"msuf-{p}-{q}-{n}") for p in range(P)]
                F["node", q, n] = self._submit(_nodes, self.m[q, n], F["prefix", q, n + 1], F["explicit", q, n + 1],
                                               *marked, name=f"node-{q}-{n}")
        node1 = np.zeros(self.V, dtype=bool)
        if N >= 2:
            ids = [self._submit(_unigram_nodes, F["rows", p, 2], F["explicit", p, 2],
                                F["node", p, 2] if N >= 3 else None, name=f"node1-{p}") for p in range(P)]
            for i in self.client.gather(ids):
                node1[i] = True
        return node1

    # -------------------------------------------------- results
    def sections(self):
        """Per order, an iterator over its pieces (rows, lp, bow, has_bow) in file order;
        each partition's piece is fetched when reached and then released."""
        def order_pieces(n):
            if n == 1:
                yield self.unigrams
                return
            for p in range(self.P):
                f = self.out.pop((p, n))
                yield f.result()
                f.release()

        return [order_pieces(n) for n in range(1, self.order + 1)]

    def write_arpa(self, path, sources=()) -> None:
        """Write the ARPA file, streamed partition by partition (``io.atomic_write``)."""
        from ..backoff.arpa import write_arpa_sections
        from ..io import atomic_write

        with atomic_write(path, inputs=sources) as fh:
            write_arpa_sections(fh, self.vocab.words, self.counts, self.sections())

    def model(self):
        """The whole model on the driver (``BackoffLM``)."""
        from ..backoff.arpa import BackoffLM

        ngrams = []
        for n, pieces in enumerate(self.sections(), start=1):
            pieces = list(pieces)
            ngrams.append(tuple(np.concatenate([pc[i] for pc in pieces]).reshape((-1, n) if i == 0 else -1)
                                for i in range(4)))
        return BackoffLM(self.vocab, ngrams)
