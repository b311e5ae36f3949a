import numba
import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_numba_thread():
    """Parallel kernels still split the work into chunks (tested), run on one thread:
    on a busy machine every parallel launch otherwise waits for a time slice."""
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(old)

TINY = """He PRP B-NP
reckons VBZ B-VP
the DT B-NP
current JJ I-NP
account NN I-NP
deficit NN I-NP
. . O

Chancellor NNP O
of IN B-PP
the DT B-NP
Exchequer NNP I-NP

He PRP B-NP
sells VBZ B-VP
the DT B-NP
deficit NN I-NP
"""


@pytest.fixture
def tiny_file(tmp_path):
    p = tmp_path / "tiny.txt"
    p.write_text(TINY, encoding="utf-8")
    return p
