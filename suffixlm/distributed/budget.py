"""Kneser-Ney within a memory budget (``suffixlm kn --memory SIZE``, lmplz's ``-S``).

The partitioned pipeline of ``distributed.kn_counts`` and ``distributed.kn_estimate``
(shards of the text counted and sorted, merged by first-word partitions, every KN stage
a pass over the partitions, the ARPA file streamed out partition by partition) runs in
this process on a ``spill.SpillClient``: task results are kept in memory up to a share
of the budget and spilled to a private directory beyond it. The budget sets how many
shards the text is cut into (a shard's counting is the largest single task) and how many
partitions the n-grams are split into, so that every task's working set stays within
its share (the task share divided among the worker threads, which run tasks at once),
whatever the size of the text. The ARPA bytes are those of the single-process
estimator (and of the Dask one) at every budget.

The per-word costs below were measured on this pipeline (PTB and a 10M-word sample of it,
order 5, no cut-offs, each task's peak RSS: counting a shard at 27-36 bytes per byte of
text; a partition's tasks at 98 bytes per word of the partition with 6 shards, 207 with
24, the merge's input growing with the shards); they scale with the order.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass

from ..corpus import CorpusError
from ..io import GZIP_MAGIC, input_name, open_error_message, open_input

#: working set of counting a shard of an order-5 model, bytes per byte of its text
COUNT_BYTES_PER_TEXT_BYTE = 32
#: working set of a partition's tasks for an order-5 model, bytes per word of the partition,
#: plus as much again per shard (merging a partition holds every shard's piece of it)
PARTITION_BYTES_PER_WORD = 80
MERGE_BYTES_PER_WORD_PER_SHARD = 5
#: peak of the in-memory estimator (``KneserNeyLM.estimate_text``, the ARPA file streamed from
#: the estimate) beyond the program itself, order 5, bytes per byte of text (measured, no
#: cut-offs, peak RSS from wait4 less a 3-word text's 152 MB: 10.8 on PTB, 10.5 and 9.8 on
#: 10M- and 50M-word samples, benchmarks/kn_scale_*.md; about 25 bytes a distinct n-gram,
#: the peak at the end of counting)
IN_MEMORY_BYTES_PER_TEXT_BYTE = 13
#: the same with the arrays the current step does not read kept on disk (``MemoryPlan.shelve``;
#: measured 6.5 on the 10M-word sample: 524 MB against 742 MB, peak RSS from wait4)
SHELVED_BYTES_PER_TEXT_BYTE = 8
#: the in-memory estimator shelves when it would otherwise take more than this share of the budget
SHELVE_SHARE = 0.5
#: share of the budget for the largest task; the store keeps results in the rest
TASK_SHARE = 0.5
CACHE_SHARE = 0.4
#: beyond these the per-task bookkeeping outweighs the work: the budget is too small
MAX_SHARDS = 4096
MAX_PARTITIONS = 512
#: the smallest budget taken
MIN_BUDGET = 1 << 20


class BudgetError(ValueError):
    """The budget cannot hold the work (a line for ``--memory``)."""


def _order_scale(order: int) -> float:
    """Memory of an order relative to order 5 (the n-gram tables grow with the order)."""
    return max(1, order - 1) / 4


@dataclass
class MemoryPlan:
    """How a budget is spent: ``cache`` bytes of results kept in memory, tasks of at most
    ``task`` bytes, the text cut into ``n_shards`` byte ranges."""

    budget: int
    cache: int
    task: int
    order: int
    n_shards: int
    threads: int = 1
    in_memory: bool = False  # the budget holds the in-memory estimator: faster, same bytes
    shelve: bool = False  # in memory, with what the step at hand does not read on disk

    def partitions(self, n_words: int) -> int:
        """First-word partitions for a text of ``n_words`` words."""
        per_word = PARTITION_BYTES_PER_WORD + MERGE_BYTES_PER_WORD_PER_SHARD * self.n_shards
        need = n_words * per_word * _order_scale(self.order) / self.task
        P = max(1, math.ceil(need))
        if P > MAX_PARTITIONS:
            raise BudgetError(self._too_small(f"{n_words:,} words", P, MAX_PARTITIONS, "partitions"))
        return P

    def _too_small(self, what: str, k: int, limit: int, parts: str) -> str:
        from ..memory import human_bytes

        least = self.budget * k / limit
        return (f"--memory {human_bytes(self.budget)} is too small for {what} at order {self.order} "
                f"({k:,} {parts}; at most {limit:,}): give at least {human_bytes(least)}")


def plan_memory(budget: int, text_bytes: int, order: int, threads: int = 1) -> MemoryPlan:
    """The plan for ``budget`` bytes and a text of ``text_bytes`` bytes (uncompressed),
    with ``threads`` tasks running at once (each gets its share of the task budget)."""
    budget = max(int(budget), MIN_BUDGET)
    threads = max(1, int(threads))
    task = int(budget * TASK_SHARE / threads)
    plan = MemoryPlan(budget, int(budget * CACHE_SHARE), task, order, 1, threads)
    need = text_bytes * COUNT_BYTES_PER_TEXT_BYTE * _order_scale(order) / task
    S = max(1, math.ceil(need))
    if S > MAX_SHARDS:
        from ..memory import human_bytes

        raise BudgetError(plan._too_small(f"{human_bytes(text_bytes)} of text", S, MAX_SHARDS, "shards"))
    plan.n_shards = S
    whole = text_bytes * IN_MEMORY_BYTES_PER_TEXT_BYTE * _order_scale(order)
    shelved = text_bytes * SHELVED_BYTES_PER_TEXT_BYTE * _order_scale(order)
    plan.in_memory = shelved <= budget * (TASK_SHARE + CACHE_SHARE)
    # past half the budget, each step's idle arrays wait on disk (a second or so more at
    # 10M words, about 30 % less memory): the budget is a ceiling, not a target
    plan.shelve = plan.in_memory and whole > budget * SHELVE_SHARE
    return plan


def plain_text(path, directory: str) -> str:
    """``path`` itself when it is an uncompressed file, which shards are cut from by byte
    ranges; standard input and gzip text are first copied, decompressed, to ``directory``
    (the spill directory, removed with it)."""
    name = input_name(path)
    if name != "<stdin>":
        try:
            with open(path, "rb") as fh:
                if fh.read(2) != GZIP_MAGIC:
                    return os.fspath(path)
        except OSError as e:
            raise CorpusError(open_error_message(path, e)) from None
    from ..io import write_error_message

    out = os.path.join(directory, "text.txt")
    try:
        src = open_input(path, error=CorpusError)
    except OSError as e:
        raise CorpusError(open_error_message(path, e)) from None
    with src:
        try:
            with open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except OSError as e:
            raise CorpusError(f"copying {name} to the temporary directory: {write_error_message(out, e)}") from None
    return out
