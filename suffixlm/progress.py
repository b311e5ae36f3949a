"""Progress on stderr for the commands: one home for how long work is reported.

* ``Progress(quiet)``: ``with progress.stage("estimating"):`` says nothing for a step
  that ends within :data:`AFTER` seconds; a longer one is announced once it has run
  that long (a timer thread: a kernel that holds the GIL delays the line, never the
  work) and its end is reported with its time. ``progress.line(text)`` reports now.
  On a terminal each line is the time and the text; off a terminal (a log, CI) the same
  timestamped lines, so a log file shows what ran and when. ``quiet`` silences all.
* ``Progress.iteration(text)``: a solver's iteration. On a terminal one line rewritten
  in place (no total: solvers stop by their tolerance, not at the cap); off a terminal a
  timestamped line at most every :data:`EVERY` seconds, and the last one at the end.
* ``announce_compilation(progress, *modules)``: the first run compiles numba kernels
  into numba's cache (about 20 s on 2 cores); said once, before it starts, when a
  module's kernels have no cache index yet.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import IO, Iterator

#: a step running longer than this (seconds) is reported
AFTER = 2.0
#: off a terminal, iteration lines at most this often (seconds)
EVERY = 5.0


class Progress:
    """Timestamped progress lines on ``stream`` (stderr); ``quiet``: none."""

    def __init__(self, quiet: bool = False, stream: IO[str] | None = None, t0: float | None = None):
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.perf_counter() if t0 is None else t0
        self.tty = _isatty(self.stream)
        self._lock = threading.Lock()
        self._open_line = False  # an iteration line rewritten in place is showing
        self._last_iteration = -1e300
        self._pending: str | None = None

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def _write(self, text: str, rewrite: bool = False) -> None:
        if self.quiet:
            return
        with self._lock:
            stamp = f"[{self.elapsed():7.1f} s] "
            try:
                if rewrite:
                    self.stream.write("\r\x1b[K" + stamp + text)
                    self._open_line = True
                else:
                    if self._open_line:
                        self.stream.write("\n")
                        self._open_line = False
                    self.stream.write(stamp + text + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # stderr closed or full: progress is not worth failing for
                pass

    def line(self, text: str) -> None:
        """Report ``text`` now."""
        self._write(text)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """A step of the work: reported only when it runs longer than :data:`AFTER` s."""
        if self.quiet:
            yield
            return
        start = time.perf_counter()
        announced = threading.Event()

        def announce():
            announced.set()
            self._write(f"{name} ...")

        timer = threading.Timer(AFTER, announce)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            if announced.is_set():
                self._write(f"{name}: done in {time.perf_counter() - start:.1f} s")

    def iteration(self, text: str) -> None:
        """One iteration's state (see the module docstring)."""
        if self.quiet:
            return
        if self.tty:
            self._write(text, rewrite=True)
            return
        now = time.perf_counter()
        if now - self._last_iteration >= EVERY:
            self._last_iteration = now
            self._pending = None
            self._write(text)
        else:
            self._pending = text

    def end_iterations(self) -> None:
        """After the last iteration: its line (off a terminal, when not shown yet)."""
        if self._pending is not None:
            self._write(self._pending)
            self._pending = None
        if self._open_line and not self.quiet:
            with self._lock:
                try:
                    self.stream.write("\n")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass
                self._open_line = False


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def kernels_cached(*modules) -> bool:
    """Whether numba's cache holds kernels of each of ``modules`` (modules with
    ``@njit(cache=True)`` functions): some function of the module has a cache index
    file. None has before the first run (or after the cache was cleared), when the
    first calls compile; a kernel that no run has called yet has none either, so one
    index per module is the test."""
    for module in modules:
        indexes = [getattr(getattr(getattr(v, "_cache", None), "_cache_file", None), "_index_path", None)
                   for v in vars(module).values()]
        indexes = [p for p in indexes if p is not None]
        if indexes and not any(os.path.exists(p) for p in indexes):
            return False
    return True


def announce_compilation(progress: Progress, *modules) -> None:
    """Say once, before it happens, that the kernels of ``modules`` are compiled now."""
    if not progress.quiet and not kernels_cached(*modules):
        progress.line("compiling the numba kernels of this command once (about 20-60 s on 2 cores; "
                      "later runs load them from the cache)")
