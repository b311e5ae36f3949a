"""suffixlm._jit: kernels load their cached code without numba's context refresh, and
give the same results as when compiled, in fresh processes."""

import json
import os
import subprocess
import sys
import textwrap

KERNELS = textwrap.dedent('''
    import numpy as np
    from suffixlm._jit import njit, prange

    @njit(cache=True, parallel=True)
    def parallel_sum(n):  # NRT arrays and numba's threads (parfors' reload)
        a = np.zeros(n)
        for i in prange(n):
            a[i] = i * 0.5
        return a.sum()

    @njit(cache=True)
    def string_keys(n):  # a typed dict of strings: the hash secret's symbols
        d = {}
        for i in range(n):
            d["wwwwwww"[:i % 7]] = i
        return len(d), d["www"]

    @njit(cache=True)
    def raises(n):  # an exception raised from cached code
        if n < 0:
            raise ValueError("negative")
        return n
''')

RUN = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import kernels as K
    out = {"sum": K.parallel_sum(1000), "keys": list(K.string_keys(100))}
    try:
        K.raises(-1)
        out["raised"] = False
    except ValueError as e:
        out["raised"] = str(e)
    out["hits"] = sum(sum(d.stats.cache_hits.values()) for d in (K.parallel_sum, K.string_keys, K.raises))
    out["misses"] = sum(sum(d.stats.cache_misses.values()) for d in (K.parallel_sum, K.string_keys, K.raises))
    out["registries"] = any(m in sys.modules for m in ("numba.np.linalg", "numba.typed.dictimpl"))
    print(json.dumps(out))
''')


def _run(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_DISABLE_JIT", None)
    p = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_cached_kernels_load_light_and_agree(tmp_path):
    (tmp_path / "kernels.py").write_text(KERNELS)
    compiled = _run(tmp_path)
    assert compiled["misses"] == 3 and compiled["hits"] == 0
    loaded = _run(tmp_path)
    assert loaded["hits"] == 3 and loaded["misses"] == 0
    # the same numbers, exceptions included, from the cache
    assert loaded["sum"] == compiled["sum"] == sum(i * 0.5 for i in range(1000))
    assert loaded["keys"] == compiled["keys"] == [7, 94]
    assert loaded["raised"] == compiled["raised"] == "negative"
    # numba's lowering registries were not imported for the loads (the refresh skipped)
    assert compiled["registries"] and not loaded["registries"]


def test_njit_forms():
    import numba

    from suffixlm._jit import njit

    @njit
    def bare(x):
        return x + 1

    @njit(cache=False)
    def called(x):
        return x * 2

    assert bare(1) == 2 and called(3) == 6
    assert isinstance(bare, numba.core.registry.CPUDispatcher) or not hasattr(bare, "py_func")
