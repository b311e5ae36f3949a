"""Context extraction against brute-force walks of a dict suffix trie."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suffixlm.contexts import extract_contexts, lookup_params, walk_contexts
from suffixlm.corpus import Corpus, Vocabulary
from suffixlm.suffixtree import SuffixTree

from .test_suffixtree import BruteTrie, brute_contexts, node_contexts


def brute_paths(bt, corpus, m, collapse=True):
    """Per position: [(tree-node context, cover)], root first."""
    out = []
    for _, ctx, _ in brute_contexts(corpus, m):
        k = 0
        while k < len(ctx) and ctx[: k + 1] in bt.count:
            k += 1
        path = []
        for d in range(k + 1):
            node = bt.tree_node_of(ctx[:d]) if collapse else ctx[:d]
            if path and path[-1][0] == node:
                path[-1][1] += 1
            else:
                path.append([node, 1])
        out.append([tuple(p) for p in path])
    return out


def as_paths(contexts, ctxs):
    nodes, cover, off = contexts.nodes.tolist(), contexts.cover.tolist(), contexts.offsets.tolist()
    return [[(ctxs[nodes[e]], cover[e]) for e in range(off[p], off[p + 1])] for p in range(len(off) - 1)]


def check_paths(tree, train, text, m, collapse=True, bt=None, ctxs=None):
    bt = bt or BruteTrie(train, m)
    ctxs = ctxs or node_contexts(tree)
    got = extract_contexts(tree, text)
    assert got.positions.tolist() == [i for i, _, _ in brute_contexts(text, m)]
    assert np.array_equal(got.targets, text.tokens[got.positions])
    assert got.targets.dtype == np.int32 and got.nodes.dtype == np.int64
    assert as_paths(got, ctxs) == brute_paths(bt, text, m, collapse)
    # the general walk gives the same as the training-text shortcut
    walked = walk_contexts(tree, text.tokens, text.offsets)
    for a, b in zip(walked, (got.positions, got.offsets, got.nodes, got.cover)):
        assert np.array_equal(a, b)
    return got


WORDS = ["a", "b", "c", "<unk>"]
sentences = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=8), min_size=1, max_size=10)
unseen = st.lists(st.lists(st.sampled_from(WORDS + ["new", "other"]), min_size=0, max_size=9), min_size=1, max_size=6)


def corpus_of(sents, vocab=None):
    return Corpus.from_strings([" ".join(s) or "<s> </s>" for s in sents], vocab)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(train=sentences, test=unseen, m=st.integers(0, 10), collapse=st.booleans())
def test_paths_match_brute_force(train, test, m, collapse):
    tr = corpus_of(train)
    tree = SuffixTree.build(tr, m, collapse=collapse)
    got = check_paths(tree, tr, tr, m, collapse)
    # training text: every path ends at full depth on an existing node, whole covers
    assert np.array_equal(got.deepest(), tree.position_node)
    assert np.array_equal(got.cover, tree.collapsed[got.nodes])
    # unseen text, same vocabulary plus a word never seen in training
    vocab = Vocabulary(tr.vocab.words + ["other"], has_unk=tr.vocab.has_unk)
    tr2 = Corpus.from_sentences(train, vocab)
    check_paths(SuffixTree.build(tr2, m, collapse), tr2, corpus_of(test, vocab), m, collapse)


def test_partial_edge_cover():
    tr = Corpus.from_strings(["x y z w", "x y z w", "q y z w"])
    tree = SuffixTree.build(tr, 4)
    te = Corpus.from_strings(["x y q w"], tr.vocab)
    got = check_paths(tree, tr, te, 4)
    # predicting w after "q y x <s>": in training q only follows <s>, so "q" and
    # "q <s>" are one tree node (c = 2) and this context stops inside its edge.
    v = tr.vocab
    nodes, cover = got.path(3)
    assert [tree.context(j) for j in nodes] == [[], [v.id("q"), v.id("<s>")]]
    assert tree.collapsed[nodes[1]] == 2
    assert cover.tolist() == [1, 1]


def test_lookup_params():
    tr = Corpus.from_strings(["a b a c", "b a b"])
    tree = SuffixTree.build(tr, 3)
    nodes, words, want = [], [], []
    for j in range(tree.n_nodes):
        for w in range(len(tr.vocab)):
            nodes.append(j)
            words.append(w)
            lo, hi = tree.succ_offsets[j], tree.succ_offsets[j + 1]
            hit = [e for e in range(lo, hi) if tree.succ_words[e] == w]
            want.append(hit[0] if hit else -1)
    got = lookup_params(tree, np.array(nodes), np.array(words))
    assert got.dtype == np.int64 and got.tolist() == want


def test_ptb_slice_train_and_unseen(shared):
    train_path = shared("corpora", "ptb", "ptb.train.txt")
    valid_path = shared("corpora", "ptb", "ptb.valid.txt")
    with open(train_path, encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(500)]
    with open(valid_path, encoding="utf-8") as fh:
        vlines = [next(fh) for _ in range(100)]
    tr = Corpus.from_strings(lines)
    te = Corpus.from_strings(vlines, tr.vocab)
    m = 5
    bt = BruteTrie(tr, m)
    for collapse in (True, False):
        tree = SuffixTree.build(tr, m, collapse=collapse)
        ctxs = node_contexts(tree)
        check_paths(tree, tr, tr, m, collapse, bt, ctxs)
        got = check_paths(tree, tr, te, m, collapse, bt, ctxs)
        if collapse:  # some unseen contexts stop inside an edge
            assert np.any(got.cover[got.offsets[1:] - 1] < tree.collapsed[got.deepest()])


def test_tree_without_position_nodes_walks():
    # e.g. a tree loaded from a model file: the training text is then walked
    import dataclasses

    tr = Corpus.from_strings(["a b a c", "b a b", "c"])
    tree = SuffixTree.build(tr, 3)
    want = extract_contexts(tree, tr)
    bare = dataclasses.replace(tree, position_node=np.zeros(0, np.int64), _cache={})
    got = extract_contexts(bare, tr)
    for k in ("positions", "offsets", "nodes", "cover"):
        assert np.array_equal(getattr(got, k), getattr(want, k))
