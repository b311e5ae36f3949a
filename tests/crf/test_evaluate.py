"""conlleval rules on hand cases and against a span-based reference."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crf.evaluate import chunk_scores, conlleval_report, label_scores, read_label_output, token_scores


def counts(gold, guess):
    sc = chunk_scores([gold], [guess])
    return sc.gold_chunks, sc.guessed_chunks, sc.correct_chunks


def test_iob2_hand_cases():
    assert counts(["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "I-NP", "O", "B-VP"]) == (2, 2, 2)
    assert counts(["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "I-NP", "O", "B-NP"]) == (2, 2, 1)
    # a chunk cut short is wrong, and the remainder is a new guessed chunk
    assert counts(["B-NP", "I-NP", "I-NP"], ["B-NP", "I-NP", "B-NP"]) == (1, 2, 0)
    # I after O starts a chunk (conlleval), type change starts a chunk
    assert counts(["O", "I-NP", "I-VP"], ["O", "B-NP", "B-VP"]) == (2, 2, 2)


def test_iob1_hand_cases():
    # IOB1: B only separates two adjacent chunks of the same type
    assert counts(["I-NP", "I-NP", "B-NP", "O", "I-VP"], ["I-NP", "I-NP", "I-NP", "O", "I-VP"]) == (3, 2, 1)


def test_report_format():
    sc = chunk_scores([["B-NP", "I-NP", "O", "B-VP"]], [["B-NP", "I-NP", "O", "B-NP"]])
    text = conlleval_report(sc)
    assert text.splitlines()[0] == "processed 4 tokens with 2 phrases; found: 2 phrases; correct: 1."
    assert text.splitlines()[1] == "accuracy:  75.00%; precision:  50.00%; recall:  50.00%; FB1:  50.00"
    assert "               NP: precision:  50.00%; recall: 100.00%; FB1:  66.67  2" in text
    assert "               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0" in text


def test_token_and_label_scores_with_unseen_label():
    gold = [["A", "B", "Z"], ["A"]]
    guess = [["A", "A", "B"], ["A"]]
    te, se = token_scores(gold, guess)
    assert te == pytest.approx(50.0) and se == pytest.approx(50.0)
    ls = label_scores(gold, guess)
    assert ls["Z"][1] == 0.0 and ls["A"][0] == pytest.approx(200 / 3)


def test_read_label_output_takes_the_last_two_columns():
    lines = ["w1 POS B-NP\tB-NP\n", "w2 POS I-NP\tO\n", "\n", "# 0 -1.0\n", "w3 POS O\tO\n",
             "# # B-NP\tB-NP\n"]
    gold, guess = read_label_output(lines)
    assert gold == [["B-NP", "I-NP"], ["O", "B-NP"]] and guess == [["B-NP", "O"], ["O", "B-NP"]]


def spans(tags):
    """Chunks as (start, end, type) sets, a direct reading of IOB tags."""
    out, start, typ = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, t = tag.partition("-")
        continues = prefix == "I" and start is not None and t == typ
        if start is not None and not continues:
            out.add((start, i, typ))
            start = None
        if prefix in ("B", "I") and not continues:
            start, typ = i, t
    return out


tags = st.lists(st.sampled_from(["O", "B-NP", "I-NP", "B-VP", "I-VP"]), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_matches_span_reference(data):
    gold = data.draw(tags)
    guess = data.draw(st.lists(st.sampled_from(["O", "B-NP", "I-NP", "B-VP", "I-VP"]),
                               min_size=len(gold), max_size=len(gold)))
    g, p = spans(gold), spans(guess)
    assert counts(gold, guess) == (len(g), len(p), len(g & p))
