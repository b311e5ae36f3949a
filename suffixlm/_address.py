"""Arrays passed to compiled code by address: a decoder's per-call kernels take the
model's arrays as integers (``ndarray.ctypes.data`` and a length) instead of as
arrays, since numba's dispatch of an array argument costs about 0.1 µs a call. The
caller keeps the arrays alive while their addresses are in use."""

from __future__ import annotations

from numba import carray, types
from numba.extending import intrinsic

from ._jit import njit


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


def _item_pointer(context, builder, signature, args, as_type):
    """(codegen) The address of ``array[index]`` (the intrinsic's two arguments) as a
    pointer to the LLVM type ``as_type``."""
    from llvmlite import ir

    ary = context.make_array(signature.args[0])(context, builder, args[0])
    index = args[1]
    if signature.args[1].bitwidth < 64:
        index = builder.sext(index, ir.IntType(64))
    return builder.bitcast(builder.gep(ary.data, [index]), as_type.as_pointer())


@intrinsic
def prefetch(typingctx, array, index):
    """A hint that ``array[index]`` (1-d) will be read soon: LLVM's ``llvm.prefetch``
    (a read, kept in every cache level). A prefetch never faults, whatever the address
    (one outside the array is dropped by the processor), so the index needs no check."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        ptr = _item_pointer(context, builder, signature, args, ir.IntType(8))
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", [ptr.type],
                                              ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]))
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(array, index), codegen


@intrinsic
def load_word(typingctx, buf, index):
    """The 8 bytes ``buf[index:index + 8]`` (a contiguous 1-d uint8 array, or bytes) as a
    uint64, the first byte lowest (little-endian on any machine), read in one unaligned
    load. Reads past the buffer's end are not checked (numba's bounds checks do not see
    it either): the caller keeps ``index + 8 <= len(buf)``."""
    if not (isinstance(buf, types.Buffer) and buf.ndim == 1 and buf.dtype == types.uint8 and buf.layout == "C"
            and isinstance(index, types.Integer)):
        return None  # a strided array's next bytes are not its next items

    def codegen(context, builder, signature, args):
        import sys

        from llvmlite import ir

        i64 = ir.IntType(64)
        value = builder.load(_item_pointer(context, builder, signature, args, i64), align=1)
        if sys.byteorder == "big":
            fn = builder.module.declare_intrinsic("llvm.bswap", [i64])
            value = builder.call(fn, [value])
        return value

    return types.uint64(buf, index), codegen


@intrinsic
def trailing_zeros(typingctx, x):
    """The number of zero bits below the lowest set bit of the uint64 ``x`` (64 for 0):
    LLVM's ``llvm.cttz``, one instruction."""
    if not (isinstance(x, types.Integer) and x.bitwidth == 64):
        return None

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        i64 = ir.IntType(64)
        i1 = ir.IntType(1)
        fn = builder.module.declare_intrinsic("llvm.cttz", [i64], ir.FunctionType(i64, [i64, i1]))
        return builder.call(fn, [args[0], i1(0)])

    return types.uint64(x), codegen


def bound_entry(dispatcher, first, *example):
    """``functools.partial(dispatcher, first)`` for a decoder's per-call path, through
    the compiled function's own Python entry point when it has one: calling it skips the
    dispatcher's choice of overload from the arguments' types (about 65 ns of a 0.2 µs
    call, measured here). ``example``: the other arguments of a typical call, which
    compile (or load) the overload whose entry point is taken; the entry point unboxes
    its arguments as that overload's types (an int for an int64), and where numba keeps
    none the dispatcher itself is bound."""
    import functools

    from numba import typeof

    dispatcher(first, *example)
    try:
        sig = tuple(typeof(a) for a in (first, *example))
        entry = dispatcher.overloads[sig].entry_point
        if not callable(entry):
            raise TypeError(entry)
    except (AttributeError, KeyError, TypeError, ValueError):
        entry = dispatcher
    return functools.partial(entry, first)
