"""The command-line parameter types and option helpers shared by every command, so that a
bad value is refused the same way everywhere, as a click usage error before any work:
:class:`FiniteFloat` (click's ``FloatRange`` lets ``nan``, ``inf`` and ``-inf``
through), ``--order`` (:data:`ORDER`), :class:`InputPath`, :func:`check_output` (an
output that is an input, or that cannot be written, fails before the work that would
produce it), the checkpoint options and Ctrl-C handling of the training commands, and
``--threads`` (:func:`threads_option`). The bounds they enforce and the names users
choose among are in :mod:`suffixlm.options`, which the library reads without click.

Not a command itself (it defines no ``command``): ``suffixlm.cli`` registers none from it.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Iterator

import click

from ..distributed import INSTALL_HINT, SCHEDULER_ENV, DaskMissingError, OptionError, client_from_options
from ..options import INT32_MAX, MAX_ORDER
from ..threads import OPTION_HELP, using


class OrderType(click.ParamType):
    """``--order``: an integer from 1 to ``MAX_ORDER``, or ``max`` (any case) for unbounded
    context (every context back to its sentence start; docs/unbounded.md), given to the
    command as None."""

    name = "order"

    def convert(self, value, param, ctx):
        if value is None or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ORDER):
            return value
        text = str(value).strip()
        if text.lower() == "max":
            return None
        try:
            n = int(text)
        except ValueError:
            self.fail(f"{value!r} is not an order: give an integer from 1 to {MAX_ORDER} or 'max'", param, ctx)
        if not 1 <= n <= MAX_ORDER:
            self.fail(f"{n} is not an order from 1 to {MAX_ORDER} (or 'max': unbounded context)", param, ctx)
        return n


ORDER = OrderType()


class FiniteFloat(click.FloatRange):
    """A float option that must be finite (``nan``, ``inf`` and ``-inf`` are refused) and,
    optionally, within ``[min, max]`` (``min_open`` / ``max_open``: strict bounds)."""

    name = "float"

    def convert(self, value, param, ctx):
        rv = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(rv, param, ctx)


class InputPath(click.Path):
    """``click.Path(exists=True, ...)`` that says why an existing-looking name cannot be
    read: a symbolic link loop is "too many levels of symbolic links", a link to nothing
    "a symbolic link to a missing file", not click's "does not exist" for both."""

    def __init__(self, **kwargs):
        kwargs.setdefault("exists", True)
        super().__init__(**kwargs)

    def convert(self, value, param, ctx):
        import errno
        import os

        if self.exists and not (self.allow_dash and value in ("-", b"-")):
            from ..io import read_error_reason

            try:
                os.stat(value)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    self.fail(f"{click.utils.format_filename(value)!r}: cannot read: {read_error_reason(e)}.",
                              param, ctx)
                if os.path.islink(value):
                    self.fail(f"{click.utils.format_filename(value)!r}: cannot read: a symbolic link to a "
                              f"missing file ({os.readlink(value)}).", param, ctx)
        return super().convert(value, param, ctx)


def check_output(output, inputs=(), binary: bool = False) -> None:
    """Before any work: refuse (``click.ClickException``, one line) an ``output`` that is
    one of ``inputs`` or that cannot be written (its directory is missing, is not a
    directory or refuses a new file; ``output`` is a directory, a socket or a block
    device; with ``binary``, a terminal). ``-`` is stdout; devices and FIFOs are
    written in place (``io.output_kind``)."""
    import os
    import re

    from ..io import check_not_input, check_writable, write_error_message

    if output is None:
        return
    if re.fullmatch(r"[0-9]{1,2}", str(output)) and not os.path.lexists(output):
        # KenLM's `lmplz -o 5`: there -o is the order; here it names the output
        raise click.UsageError(f"-o {output}: -o names the output file here; did you mean --order {output}? "
                               f"(to write a file named {output}, give it as ./{output})")
    try:
        check_not_input(output, inputs)
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    try:
        check_writable(output, binary=binary)
    except OSError as e:
        raise click.ClickException(write_error_message(output, e)) from None


@contextlib.contextmanager
def writing(output, errors: tuple = (ValueError,)) -> Iterator[None]:
    """Around the write of ``output``: an ``OSError`` (disk full, no permission) or one of
    ``errors`` (what the model cannot put in that format) ends the command in one line
    naming the file; the atomic writers of :mod:`suffixlm.io` leave nothing behind."""
    from ..io import write_error_message

    try:
        yield
    except OSError as e:
        raise click.ClickException(write_error_message(output, e)) from None
    except errors as e:
        raise click.ClickException(f"{output}: cannot write: {e}") from None


def write_backoff(model, output, binary: bool) -> None:
    """A back-off model to ``output``: the binary format (``suffixlm build-binary``'s) or ARPA."""
    if wants_binary(binary):
        from ..backoff.binary import write_binary

        write_binary(model, output, quantize=quantize_bits())
    else:
        model.write_arpa(output)


def min_word_count_option(f):
    """``--min-word-count N`` (words seen fewer times become ``<unk>``) of ``train`` and
    ``tree``, and its former name ``--min-count``, kept as a hidden alias that warns:
    ``suffixlm kn --min-count`` means n-gram cut-offs, another thing. The command reads
    the value with :func:`min_word_count`."""
    def deprecated(ctx, param, value):
        if value is not None:
            click.echo("warning: --min-count here is now --min-word-count (a word-frequency threshold; "
                       "`suffixlm kn --min-count` means n-gram cut-offs); the old name will go", err=True)
            ctx.meta["suffixlm.min_word_count"] = value
        return value

    f = click.option("--min-count", "min_count_deprecated", type=click.IntRange(1, INT32_MAX), default=None,
                     hidden=True, expose_value=False, callback=deprecated)(f)
    return click.option("--min-word-count", "min_count", default=1, show_default=True,
                        type=click.IntRange(1, INT32_MAX),
                        help="Words seen fewer times become <unk> (formerly --min-count).")(f)


def min_word_count(value: int) -> int:
    """The ``--min-word-count`` value, or that of its deprecated alias when it was given."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get("suffixlm.min_word_count", value) if ctx is not None else value


def check_text_input(path, what: str = "text") -> None:
    """Refuse, in one line, a model file given where ``what`` (a text) is expected: a
    zip (the container of suffixlm and CRF models) or an ARPA file. Arguments given in
    the wrong order are the usual cause (``suffixlm ppl TEST.txt MODEL``)."""
    if path is None or str(path) == "-":
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return  # the reader reports it
    if head.startswith(b"PK\x03\x04"):
        kind = "a model file (zip)"
    elif head.lstrip(b"\r\n\t ").startswith(b"\\data\\"):
        kind = "an ARPA model"
    else:
        return
    raise click.UsageError(f"{path}: this is {kind}, not {what}; arguments swapped?")


def report_stream(output) -> bool:
    """True when a command's report must go to stderr: its output goes to stdout (``-``
    or ``/dev/stdout``), which then carries the output alone."""
    from ..io import descriptor_of

    return output is not None and (str(output) == "-" or descriptor_of(output) == 1)


# ---------------------------------------------------------------------- checkpoints
class CheckpointEvery(click.ParamType):
    """``--checkpoint-every``: N iterations or a time (30s, 5m, 1h); the text is kept."""

    name = "N|TIME"

    def convert(self, value, param, ctx):
        from ..checkpoint import parse_every

        try:
            parse_every(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        return str(value).strip()


def checkpoint_options(not_with: str = ""):
    """The ``--checkpoint``, ``--checkpoint-every`` and ``--resume`` options of the training
    commands (one definition: ``suffixlm train`` and ``suffixlm crf train``); ``not_with``:
    a sentence added to ``--checkpoint``'s help."""
    def decorate(f):
        f = click.option("--resume", is_flag=True,
                         help="Go on from the --checkpoint file (refused unless written for the same data and "
                              "options): the model is the one the uninterrupted run makes, bit for bit.")(f)
        f = click.option("--checkpoint-every", default=None, type=CheckpointEvery(),
                         help="With --checkpoint: every N iterations (50) or every so much time (30s, 5m, 1h). "
                              "Default: 60s.")(f)
        return click.option("--checkpoint", "checkpoint_path", default=None, type=click.Path(dir_okay=False),
                            help="Save the training state to this file every --checkpoint-every and on Ctrl-C "
                                 "(which then stops with exit status 130, writing no model); removed once the model "
                                 "is written (docs/checkpoint.md)." + (" " + not_with if not_with else ""))(f)
    return decorate


def open_checkpoint(path, every, resume: bool, context: dict, output, inputs=()):
    """The :class:`suffixlm.checkpoint.Checkpoint` of ``--checkpoint PATH`` (None without
    it), before any work: ``--resume`` and ``--checkpoint-every`` need it; it is neither the
    model ``output`` nor an input, and can be written; with ``resume`` the file is read
    and checked now, without it a file already there is refused. ``context``: the
    command's options that change the result (compared on resuming). Every refusal is a
    one-line ``click`` error."""
    import os

    if path is None:
        if resume:
            raise click.UsageError("--resume needs --checkpoint PATH (the checkpoint to go on from)")
        if every is not None:
            raise click.UsageError("--checkpoint-every needs --checkpoint PATH")
        return None
    from ..checkpoint import DEFAULT_EVERY, Checkpoint, CheckpointError

    if output is not None and os.path.abspath(path) == os.path.abspath(output):
        raise click.UsageError("--checkpoint must be another file than the model")
    inputs = [p for p in inputs if p is not None]
    check_output(path, [*inputs, output])
    try:
        return Checkpoint(path, every if every is not None else DEFAULT_EVERY, resume=resume, context=context,
                          inputs=[*inputs, output])
    except CheckpointError as e:
        raise click.ClickException(str(e)) from None


#: Exit status of a training command stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED_STATUS = 130


def training_interrupts(checkpoint, output, saving: bool = False):
    """Context manager for the training (``saving=False``) or the model's write
    (``saving=True``) of a command with ``--checkpoint``: Ctrl-C ends the command with
    one line on stderr and exit status :data:`INTERRUPTED_STATUS`, the model not written.
    During training the first Ctrl-C (once an iteration has ended) writes a checkpoint at
    the end of the iteration under way (``Checkpoint.handle_interrupts``); during the
    write it stops at once (``io.atomic_write`` leaves no partial file). Without a
    checkpoint (None) it changes nothing."""
    import contextlib

    @contextlib.contextmanager
    def guard():
        if checkpoint is None:
            yield
            return
        from ..checkpoint import Interrupted

        ck = checkpoint
        try:
            if saving:
                yield
            else:
                with ck.handle_interrupts():
                    yield
        except Interrupted as e:
            _interrupted(f"checkpoint of {e.where} written to {ck.path}; {output} not written; continue with "
                         "--resume")
        except KeyboardInterrupt:
            _interrupted(_kept(ck, output))
        if ck.stop_requested and not saving:  # Ctrl-C after the last iteration's checkpoint
            _interrupted(_kept(ck, output))

    return guard()


def _kept(ck, output) -> str:
    if ck.written:
        return f"{output} not written; the checkpoint of {ck.written} is in {ck.path}; continue with --resume"
    if ck.resume:
        return f"{output} not written; the checkpoint {ck.path} is as it was; continue with --resume"
    return f"{output} not written; stopped before the first checkpoint, nothing to resume"


def _interrupted(message: str):
    click.echo(f"interrupted: {message}", err=True)
    click.get_current_context().exit(INTERRUPTED_STATUS)


# ---------------------------------------------------------------------- threads
def threads_option(f=None, *, forward: bool = False):
    """Click decorator: ``--threads N`` (:data:`OPTION_HELP`). The command runs with that
    many threads (:func:`using`; default: numba's), restored when it returns. The command
    function receives ``threads`` only with ``forward=True`` (``@threads_option(forward=True)``,
    for a command that hands the count on, e.g. to a checkpoint); else it never sees it."""

    def decorate(func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            threads = kwargs.get("threads") if forward else kwargs.pop("threads", None)
            with using(threads):
                return func(*args, **kwargs)

        return click.option("--threads", type=click.IntRange(1), default=None, metavar="N", help=OPTION_HELP)(run)

    return decorate(f) if f is not None else decorate


# ---------------------------------------------------------------------- Dask
def distributed_options(f):
    """Click decorator adding ``--workers``, ``--scheduler`` and ``--memory-limit``; the
    command receives ``workers``, ``scheduler`` and ``memory_limit`` (``--scheduler``
    defaults to ``$DASK_SCHEDULER_ADDRESS``)."""
    f = click.option("--memory-limit", "memory_limit", default=None, metavar="BYTES",
                     help="Memory limit of each local worker (e.g. 2GB, 500MiB; Dask's default: "
                          "the machine's memory shared among the workers). Only with --workers.")(f)
    f = click.option("--scheduler", "scheduler", default=None, envvar=SCHEDULER_ENV, metavar="ADDRESS",
                     help=f"Run on the existing Dask cluster at ADDRESS (e.g. tcp://10.0.0.1:8786; "
                          f"default ${SCHEDULER_ENV}). Needs {INSTALL_HINT}.")(f)
    f = click.option("--workers", "workers", default=None, type=click.IntRange(1, 4096), metavar="N",
                     help=f"Run on a local Dask cluster of N worker processes. Needs {INSTALL_HINT}.")(f)
    return f


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None, memory_limit=None) -> Iterator[object | None]:
    """:func:`suffixlm.distributed.client_from_options` for a command: what it refuses
    becomes a one-line click error (a bad option value names the option)."""
    stack = contextlib.ExitStack()
    try:
        client = stack.enter_context(client_from_options(workers, scheduler, memory_limit))
    except OptionError as e:
        if e.option:
            raise click.BadParameter(str(e), param_hint=e.option) from None
        raise click.UsageError(str(e)) from None
    except (DaskMissingError, ConnectionError) as e:
        raise click.ClickException(str(e)) from None
    with stack:
        yield client


def parse_lam(value: str):
    """``--lam``: a number >= 0, 'default' (None) or 'auto'."""
    if value == "auto":
        return "auto"
    if value == "default":
        return None
    try:
        x = float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither a number, 'default' nor 'auto'", param_hint="--lam") from None
    if not (x >= 0 and math.isfinite(x)):
        raise click.BadParameter(f"{value!r}: must be a finite number >= 0", param_hint="--lam")
    return x


def _remember_quantize(ctx, param, value):
    if value is not None:
        ctx.meta["suffixlm.quantize"] = value
    return value


def quantize_bits() -> int | None:
    """The bits of ``--quantize`` in the command running (None: not given, or no command)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get("suffixlm.quantize")


def quantize_option(help: str):
    """``--quantize BITS``, read by :func:`quantize_bits` (not passed to the command)."""
    return click.option("--quantize", type=click.IntRange(1, 8), default=None, metavar="BITS", expose_value=False,
                        callback=_remember_quantize, help=help)


def binary_option(f):
    """``--binary`` and ``--quantize BITS`` of the commands that write a back-off model (kn,
    prune, export): the command reads ``binary`` (``--quantize`` implies it:
    :func:`wants_binary`) and :func:`write_backoff` the bits."""
    f = quantize_option("Write OUTPUT as a quantised binary model (implies --binary): each log10 p and back-off "
                        "weight in BITS bits, as `suffixlm build-binary --quantize BITS` writes (KenLM's -q / -b).")(f)
    return click.option(
        "--binary", is_flag=True,
        help="Write OUTPUT as a binary model (memory-mapped at load, as `suffixlm build-binary` writes) instead of "
             "ARPA.")(f)


def wants_binary(binary: bool) -> bool:
    """``--binary``, or ``--quantize`` (which implies it)."""
    return bool(binary) or quantize_bits() is not None
