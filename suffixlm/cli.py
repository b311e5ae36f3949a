"""The ``suffixlm`` command.

A thin click group. Sub-commands live in ``suffixlm/commands/<name>.py``; each such
module defines a click command (or group) named ``command`` and is registered here
automatically, so adding a sub-command never means editing this file.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from . import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="suffixlm")
def main() -> None:
    """Log-linear language models on suffix trees, Kneser-Ney baselines and CRFs."""


def _register() -> None:
    from . import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        cmd = getattr(mod, "command", None)
        if isinstance(cmd, click.Command):
            main.add_command(cmd)


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
