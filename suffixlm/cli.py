"""The ``suffixlm`` command.

A thin click group. Sub-commands live in ``suffixlm/commands/<name>.py``; each such
module defines a click command (or group) named ``command`` and is registered here
automatically, so adding a sub-command never means editing this file.

Other installed packages add command groups through the entry-point group
``suffixlm.commands`` (``crf`` registers ``suffixlm crf`` that way in pyproject.toml), so
suffixlm never imports them by name: dependencies run one way, crf -> suffixlm.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import pkgutil
import sys

from . import __version__, threads as _threads

_threads.set_blas_threads()  # before anything imports numpy (docs/threads.md)

import click  # noqa: E402

ENTRY_POINT_GROUP = "suffixlm.commands"


class _Commands(dict):
    """The group's commands by name: a built-in one (``suffixlm/commands/<module>.py``) is
    imported when it is first asked for, so a command imports only its own module (all
    of them cost tens of milliseconds at every start)."""

    def __init__(self, modules: dict[str, str]):
        super().__init__()
        self.modules = modules  # command name -> module name, not imported yet

    def load(self, name: str) -> None:
        module = self.modules.pop(name, None)
        if module is not None:
            cmd = getattr(importlib.import_module(f"{__package__}.commands.{module}"), "command", None)
            if isinstance(cmd, click.Command):
                self.setdefault(cmd.name or name, cmd)

    def load_all(self) -> None:
        for name in list(self.modules):
            self.load(name)

    def __missing__(self, name):
        self.load(name)
        if name in self:
            return self[name]
        raise KeyError(name)


class _Group(click.Group):
    """The built-in sub-commands (imported when asked for, :class:`_Commands`), plus the
    entry-point groups of other packages, which are looked up only when a name is not
    built in or the command list is shown (reading every installed distribution's
    metadata costs a noticeable fraction of a second)."""

    _plugins_loaded = False

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from importlib.metadata import entry_points  # 20 ms: only when a plug-in may be asked for

        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in self.commands:
                continue  # a built-in command keeps its name
            try:
                cmd = ep.load()
            except Exception as e:  # a broken plug-in must not take the whole CLI down
                click.echo(f"suffixlm: command {ep.name!r} from {ep.value} is unavailable: {e}", err=True)
                continue
            if isinstance(cmd, click.Command):
                self.add_command(cmd, ep.name)

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not isinstance(cmd, click.Group):
            _single_dash_hint(cmd, rest)
        return name, cmd, rest

    def get_command(self, ctx, cmd_name):
        if isinstance(self.commands, _Commands):
            self.commands.load(cmd_name)
        if cmd_name not in self.commands:
            self._load_plugins()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx):
        if isinstance(self.commands, _Commands):
            self.commands.load_all()
        self._load_plugins()
        return super().list_commands(ctx)

    def invoke(self, ctx):
        _tolerant_text_streams()
        _skip_numba_blas_probe()
        _quick_exit()
        try:
            rv = super().invoke(ctx)
            sys.stdout.flush()  # here, where a closed or full stdout is reported, not at exit
            return rv
        except MemoryError as e:
            # an allocation sized by the input that the machine cannot hold: one line, no traceback
            raise click.ClickException(f"out of memory ({e or 'an allocation failed'})") from None
        except click.ClickException as e:
            if isinstance(e.__context__, BrokenPipeError):
                _stdout_closed()
            raise
        except BrokenPipeError:
            _stdout_closed()
        except KeyboardInterrupt:
            # Ctrl-C (a training command with --checkpoint reports its own line first): one line,
            # the shell's status for SIGINT; outputs written by replacement were left as they were
            with contextlib.suppress(Exception):
                click.echo("interrupted (Ctrl-C)", err=True)
            raise SystemExit(130) from None
        except OSError as e:
            if e.filename is not None or e.errno not in _STREAM_ERRNOS:
                raise
            # a write to stdout or stderr failed (a full disk behind a redirection): one line
            raise click.ClickException(f"cannot write the output: {os.strerror(e.errno).lower()}") from None


_exit_registered = False


def _quick_exit() -> None:
    """At exit, after every other exit handler, freeze the objects the cyclic garbage
    collector tracks (``gc.freeze``): the interpreter's shutdown then frees what reference
    counts free (files close and flush, temporary directories go) without traversing
    numba's hundreds of thousands of objects in every collection it runs while clearing
    the modules. That traversal took 0.11-0.44 s of every command that had started numba,
    against about 0.03 s after it (measured from the last exit handler to the end of the
    process); only cyclic garbage, which the process leaves to the system anyway, is not
    collected. Registered once, at the first command a process runs."""
    global _exit_registered
    if not _exit_registered:
        import atexit
        import gc

        atexit.register(gc.freeze)
        _exit_registered = True


#: SRILM options (``ngram-count``, ``ngram``) without an option of the same name here
_SRILM_OPTIONS = {
    "lm": "the model is the first argument (MODEL), or --arpa MODEL.arpa",
    "ppl": "the test text is an argument (suffixlm ppl MODEL TEST.txt)",
    "text": "the training text is the argument (suffixlm kn TRAIN.txt -o MODEL.arpa)",
    "write-lm": "the output is -o / --output (suffixlm ppl --write-lm for merged mixtures)",
    "kndiscount": "modified Kneser-Ney is the default (--modified)",
    "ukndiscount": "--original",
    "interpolate": "Kneser-Ney is interpolated, as SRILM's -interpolate",
    "gt1min": "--min-count 1,1,2 (cut-offs per order)", "gt2min": "--min-count 1,1,2 (cut-offs per order)",
    "gt3min": "--min-count 1,1,2 (cut-offs per order)", "gt4min": "--min-count 1,1,2 (cut-offs per order)",
    "gt5min": "--min-count 1,1,2 (cut-offs per order)",
    "mix-lm": "--mix-lm", "lambda": "--lambda", "prune": "--threshold (suffixlm prune) or --prune (suffixlm kn)",
    "debug": "--debug", "vocab": "--vocab", "order": "--order",
}


def _single_dash_hint(cmd: click.Command, args) -> None:
    """SRILM's and KenLM's habit of single-dash long options (``-order 5``, ``-lm X``),
    which click would read as ``-o rder``: a one-line usage error naming the option meant."""
    longs = {o[2:] for p in cmd.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)
             if o.startswith("--")}
    shorts = {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts if not o.startswith("--")}
    for a in args:
        if a == "--":
            break
        name = a[1:].split("=", 1)[0]
        if not a.startswith("-") or a.startswith("--") or len(a) < 3 or not a[1].isalpha() or a[:2] not in shorts \
                and name not in longs and name not in _SRILM_OPTIONS:
            continue
        if name in _SRILM_OPTIONS and name not in longs:
            raise click.UsageError(f"{a}: SRILM's option; here {_SRILM_OPTIONS[name]} (see `suffixlm {cmd.name} "
                                   "--help`)")
        if name in longs:
            raise click.UsageError(f"{a}: a single-dash long option (SRILM's spelling); did you mean --{name}?")
        if a[:2] in shorts and name.isalpha() and len(name) > 2:
            raise click.UsageError(f"{a}: read as {a[:2]} {a[2:]!r}; if you meant an SRILM-style option, "
                                   f"suffixlm's long options start with -- (see `suffixlm {cmd.name} --help`)")


#: errors of a write to a stream (no file name attached) reported in one line
_STREAM_ERRNOS = (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF)

#: exit status when stdout's reader has gone (``| head``): that of a process ended by SIGPIPE
BROKEN_PIPE_STATUS = 141


def _stdout_closed():
    """The reader of stdout has gone (``suffixlm ... | head``): stop quietly, as the C
    tools do when SIGPIPE ends them; nothing more is written to the closed pipe."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    raise SystemExit(BROKEN_PIPE_STATUS)


class _NumbaBlasProbe:
    """A meta-path finder that answers numba's import-time BLAS probe (``numba.np.arraymath``
    imports ``scipy.linalg.cython_blas`` to learn whether ``np.dot`` may call BLAS) with
    ImportError, then removes itself. That probe imports scipy: 0.15 s of every command's
    start where scipy is installed, for BLAS that no kernel here calls. numba then uses its
    own loop for the one function that asks (``np.correlate``'s inner product); its real
    linear algebra (``np.dot`` of matrices) still imports scipy when compiled, since the
    finder is gone by then. Only the ``suffixlm`` command installs it: a user's process that
    imports suffixlm keeps numba's own behaviour."""

    def find_spec(self, name, path=None, target=None):
        if name not in ("scipy", "scipy.linalg"):
            return None
        frame = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if code.co_name == "_check_blas" and code.co_filename.endswith(os.path.join("numba", "np", "arraymath.py")):
                self.remove()
                raise ImportError("scipy is not imported for numba's BLAS probe in the suffixlm command")
            frame = frame.f_back
        return None

    def remove(self) -> None:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)


def _skip_numba_blas_probe() -> None:
    """Install :class:`_NumbaBlasProbe` unless numba's probe has run or ``scipy.linalg``
    is already imported (then the probe costs nothing)."""
    if "scipy.linalg" in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    if not any(isinstance(f, _NumbaBlasProbe) for f in sys.meta_path):
        sys.meta_path.insert(0, _NumbaBlasProbe())


def _tolerant_text_streams():
    """A terminal or pipe whose encoding cannot show a word (a Latin-1 or ASCII locale)
    gets it escaped (``\\u20ac``) in reports and messages instead of a codec error. The
    files the commands write (ARPA, labels, models) are always UTF-8."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding not in ("utf8", "utf8sig") and hasattr(stream, "reconfigure"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="backslashreplace")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="suffixlm")
def main() -> None:
    """Log-linear language models on suffix trees, Kneser-Ney baselines and CRFs."""


def _register() -> None:
    """Name every built-in command after its module (``build_binary`` -> ``build-binary``,
    the name its ``@click.command`` gives; tests/test_cli.py checks they agree), to be
    imported when asked for."""
    from . import commands

    main.commands = _Commands({info.name.replace("_", "-"): info.name
                               for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name)
                               if not info.name.startswith("_")})


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
