"""The kernel behind :func:`suffixlm.threads.spread`: the kernel ids (Linux thread ids,
``gettid``) of the threads numba runs a parallel region on, from the thread that asks."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import njit, prange


@intrinsic
def _gettid(typingctx):
    """The calling thread's kernel id (libc's ``gettid``, resolved by name when the
    compiled code is loaded, so the kernel can be cached)."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), "gettid")
        return builder.sext(builder.call(fn, []), ir.IntType(64))

    return types.int64(), codegen


@njit(cache=True, parallel=True)
def thread_ids(n):
    """int64[n]: the kernel id of the thread that ran each of ``n`` iterations of a
    parallel loop (numba splits them among all its threads in force)."""
    out = np.empty(n, dtype=np.int64)
    for i in prange(n):
        out[i] = _gettid()
    return out
