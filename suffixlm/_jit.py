"""numba's ``njit`` for every suffixlm and crf kernel, with a lighter load from the
on-disk cache.

Before it loads a cached kernel, numba refreshes its target context
(``Cache.load_overload`` calls ``target_context.refresh()``), and the first refresh of a
process imports and installs every lowering registry numba has: array math, linear
algebra, random numbers, typed containers, jitclass, third-party extensions. That is
about 0.2 s of a command's start (a third of ``suffixlm kn`` on PTB) and 11 MB, spent on
code generators a cached kernel never runs: its machine code needs only the runtime's
symbols (``rtsys.initialize``), numba's C helpers (registered when numba is imported)
and the hash secret (registered when ``numba.cpython.hashing`` is imported; a kernel
that hashes reads it).

So a kernel made here loads its cached code after just those two steps. Everything else
is numba's own path: a kernel that is not in the cache (or whose cache is stale) is
compiled, and numba's compiler refreshes the context itself; a load that fails in any
way is retried by numba's own ``load_overload``. Only the dispatchers made here are
changed, never numba's classes, so other numba code in the process is unaffected.
"""

from __future__ import annotations

import importlib
import types

import numba
from numba import prange  # noqa: F401  (the kernels' import)

__all__ = ["njit", "prange"]

_runtime_ready = False


def _load_overload(cache, sig, target_context):
    """``Cache.load_overload`` without the context's refresh (see the module's text)."""
    global _runtime_ready
    try:
        if not _runtime_ready:
            from numba.core.runtime import rtsys

            importlib.import_module("numba.cpython.hashing")  # registers the hash secret's symbols
            rtsys.initialize(target_context)
            _runtime_ready = True
        with cache._guard_against_spurious_io_errors():
            return cache._load_overload(sig, target_context)
    except Exception:  # numba's own path, whatever went wrong
        return type(cache).load_overload(cache, sig, target_context)


def _light(dispatcher):
    cache = getattr(dispatcher, "_cache", None)
    if cache is not None and hasattr(cache, "_load_overload") and hasattr(cache, "_guard_against_spurious_io_errors"):
        cache.load_overload = types.MethodType(_load_overload, cache)
    return dispatcher


def njit(*args, **kwargs):
    """``numba.njit`` (same arguments, bare or called), its dispatcher loading cached
    code the light way."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return _light(numba.njit(args[0]))
    decorate = numba.njit(*args, **kwargs)
    return lambda f: _light(decorate(f))
