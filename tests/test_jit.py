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


DEPENDENT_RUN = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from pkg import b
    out = {"g": b.g(1), "hits": sum(b.g.stats.cache_hits.values()), "misses": sum(b.g.stats.cache_misses.values())}
    print(json.dumps(out))
''')


def test_a_kernel_is_compiled_again_when_a_module_it_imports_changes(tmp_path):
    """numba stamps a kernel's cache with its own file only; the dependency stamp also
    covers the modules it imports (a kernel called, a constant read): a change there
    makes the cache stale, as after a ``git pull`` into an editable install."""
    from suffixlm._jit import dependency_stamp

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from suffixlm._jit import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    (pkg / "c.py").write_text("K = 3\n")
    (pkg / "b.py").write_text("from suffixlm._jit import njit\nfrom .a import f\nfrom .c import K  # a constant\n\n\n"
                              "@njit(cache=True)\ndef g(x):\n    return f(x) * K\n")

    def run():
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
        env.pop("NUMBA_DISABLE_JIT", None)
        p = subprocess.run([sys.executable, "-c", DEPENDENT_RUN, str(tmp_path)], env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    def edit(name, text):
        path = pkg / name
        before = path.stat()
        path.write_text(text)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # a later time, whatever the clock

    assert run() == {"g": 6, "hits": 0, "misses": 1}
    assert run() == {"g": 6, "hits": 1, "misses": 0}
    edit("a.py", "from suffixlm._jit import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 2\n")
    assert run() == {"g": 9, "hits": 0, "misses": 1}  # numba's own stamp would have given 6 from the cache
    edit("c.py", "K = 4\n")
    assert run() == {"g": 12, "hits": 0, "misses": 1}
    assert run() == {"g": 12, "hits": 1, "misses": 0}
    sys.path.insert(0, str(tmp_path))
    try:
        import pkg.b  # noqa: F401  (the stamp reads the package's files)

        assert [m for m, _, _ in dependency_stamp("pkg.b")] == ["pkg.a", "pkg.b", "pkg.c", "suffixlm._jit"]
    finally:
        sys.path.remove(str(tmp_path))
        for m in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[m]
