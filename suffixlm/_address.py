"""Arrays passed to compiled code by address: a decoder's per-call kernels take the
model's arrays as integers (``ndarray.ctypes.data`` and a length) instead of as
arrays, since numba's dispatch of an array argument costs about 0.1 µs a call. The
caller keeps the arrays alive while their addresses are in use."""

from __future__ import annotations

from numba import carray, njit, types
from numba.extending import intrinsic


@intrinsic
def typed_pointer(typingctx, address, dtype):
    """The pointer to ``dtype`` (``np.int64``, ``np.float64``, ``np.bool_``, ...) at the
    integer ``address``."""
    if not isinstance(address, types.Integer):
        return None
    if isinstance(dtype, types.NumberClass):
        elem = dtype.instance_type
    elif isinstance(dtype, types.DType):
        elem = dtype.dtype
    else:
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return types.CPointer(elem)(address, dtype), codegen


@njit(cache=True, inline="always")
def array_at(address, size, dtype):
    """The 1-d array of ``size`` items of ``dtype`` at ``address`` (C-contiguous)."""
    return carray(typed_pointer(address, dtype), (size,))
