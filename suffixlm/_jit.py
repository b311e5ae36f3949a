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

A kernel's cache is also stale when a module it imports has changed. numba stamps a
cache with its own source file only (size and time), but a kernel's machine code holds
what it calls and reads from other modules: their kernels (inlined or linked in), their
intrinsics, their constants. After a ``git pull`` into an editable install that changed
``_text_kernels.py`` and not ``backoff/_binary_kernels.py``, numba would go on running
the binary model's cached text reader with the old splitting rules. Here the stamp also
holds the size and time of every module of the package that the kernel's module
imports at its top level, and of theirs in turn (``dependency_stamp``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import types

import numba
from numba import prange  # noqa: F401  (the kernels' import)

__all__ = ["njit", "prange"]

_runtime_ready = False

#: a module's top-level imports: ``from X import names`` (names possibly in parentheses
#: over several lines) and ``import X``
_IMPORT = re.compile(r"^from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|^import[ \t]+([\w.]+)", re.M)
_direct: dict = {}  # module name -> (its source file, the package modules it imports), or None


def _source_file(name: str) -> str | None:
    """The source file of module ``name`` under its top-level package's directory
    (without importing it), or None."""
    top = sys.modules.get(name.split(".")[0])
    root = getattr(top, "__file__", None)
    if root is None:
        return None
    parts = name.split(".")[1:]
    if not parts:  # a top-level module or package: its own file
        return root if root.endswith(".py") and os.path.isfile(root) else None
    base = os.path.join(os.path.dirname(root), *parts)
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _imports(name: str):
    """(source file, the modules of the same top-level packages that ``name`` imports at
    its top level), cached; None when its source cannot be read."""
    if name in _direct:
        return _direct[name]
    path = _source_file(name)
    got = None
    if path is not None:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            text = None
        if text is not None:
            package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
            deps = set()
            for m in _IMPORT.finditer(text):
                if m.group(3):
                    deps.add(m.group(3))
                    continue
                try:
                    base = importlib.util.resolve_name(m.group(1), package)
                except (ImportError, ValueError):
                    continue
                items = re.sub(r"#[^\n]*", "", m.group(2)).strip().strip("()")
                names = [item.split()[0] for item in items.split(",") if item.split()]  # "name" or "name as alias"
                subs = [f"{base}.{n}" for n in names if _source_file(f"{base}.{n}") is not None]
                deps.update(subs)
                if len(subs) < len(names):  # names defined in the module or package itself
                    deps.add(base)
            got = (path, deps)
    _direct[name] = got
    return got


def dependency_stamp(name: str) -> tuple | None:
    """(module, size, modification time) of module ``name``'s source and of every module
    of its top-level package (and of this one's) that it imports at its top level,
    transitively, sorted; None when its source cannot be read."""
    roots = {name.split(".")[0], __name__.split(".")[0]}
    stamp = []
    seen = set()
    todo = [name]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        got = _imports(mod)
        if got is None:
            if mod == name:
                return None
            continue
        path, deps = got
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp.append((mod, st.st_size, st.st_mtime))
        todo.extend(d for d in deps if d.split(".")[0] in roots and d not in seen)
    return tuple(sorted(stamp))


def _stamp(cache) -> None:
    """Give ``cache`` its dependency stamp (``dependency_stamp``) before it is first read
    or written; numba's own stamp where the source cannot be read."""
    if getattr(cache, "_stamped", True):
        return
    cache._stamped = True
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None or not hasattr(cache_file, "_source_stamp"):
        return
    deps = dependency_stamp(cache._module)
    if deps is not None:
        cache_file._source_stamp = (cache_file._source_stamp, deps)


def _load_overload(cache, sig, target_context):
    """``Cache.load_overload`` without the context's refresh (see the module's text)."""
    global _runtime_ready
    _stamp(cache)
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
        cache._module = dispatcher.py_func.__module__
        cache._stamped = False  # the dependency stamp is taken on the first load (every module imported by then)
    return dispatcher


def njit(*args, **kwargs):
    """``numba.njit`` (same arguments, bare or called), its dispatcher loading cached
    code the light way."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return _light(numba.njit(args[0]))
    decorate = numba.njit(*args, **kwargs)
    return lambda f: _light(decorate(f))
