"""The back-off family: n-gram models that are ARPA files in memory (``arpa``), SRILM's
back-off index they are scored, pruned and mixed with (``index``, ``prune``, ``mix``),
Kneser-Ney estimation (``kn``, ``kn_estimate``, ``kn_steps``; on the suffix tree:
``kn_tree``), and binary models with KenLM's queries (``binary``, ``table``)."""
