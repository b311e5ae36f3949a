"""``suffixlm tree --order``: required without click's ``required`` (``max`` converts to
None, which click 8.1 and 8.2 take for a missing value), and ``--json`` keeps a finite
order an integer. The rest of ``--order max`` is tested in ``test_cli_order_max.py``."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from suffixlm.cli import main
from suffixlm.commands.tree import command as tree_command
from suffixlm.corpora import sample_path
from suffixlm.corpus import load_training_corpus

TINY = str(sample_path("tiny_lm.train.txt"))


def _tree(*args):
    return CliRunner().invoke(main, ["tree", TINY, "-q", *args])


def test_tree_order_is_required_but_max_is_a_value():
    (param,) = [p for p in tree_command.params if p.name == "order"]
    # click 8.1/8.2 would refuse `--order max` (None) as "Missing option" under required=True
    assert not param.required
    r = _tree()
    assert r.exit_code == 2 and "Missing option '--order'" in r.output, r.output
    r = _tree("-n", "MAX", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["order"] == "max"


def test_tree_json_order_stays_an_integer_and_the_table_names_max_and_its_order():
    r = _tree("--order", "4", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["order"] == 4  # as before --order max: an integer, not "4"
    N = int(np.diff(load_training_corpus(TINY).offsets).max())
    r = _tree("--order", "max")
    assert r.exit_code == 0, r.output
    (line,) = [ln for ln in r.output.splitlines() if ln.startswith("order ")]
    assert line.split(None, 1)[1] == f"max ({N})"
