"""The ``suffixlm`` command.

A thin click group. Sub-commands live in ``suffixlm/commands/<name>.py``; each such
module defines a click command (or group) named ``command`` and is registered here
automatically, so adding a sub-command never means editing this file.

Other installed packages add command groups through the entry-point group
``suffixlm.commands`` (``crf`` registers ``suffixlm crf`` that way in pyproject.toml), so
suffixlm never imports them by name: dependencies run one way, crf -> suffixlm.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points

import click

from . import __version__

ENTRY_POINT_GROUP = "suffixlm.commands"


class _Group(click.Group):
    """The built-in sub-commands, plus the entry-point groups of other packages, which are
    looked up only when a name is not built in or the command list is shown (reading
    every installed distribution's metadata costs a noticeable fraction of a second)."""

    _plugins_loaded = False

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
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

    def get_command(self, ctx, cmd_name):
        if cmd_name not in self.commands:
            self._load_plugins()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx):
        self._load_plugins()
        return super().list_commands(ctx)

    def invoke(self, ctx):
        # an allocation sized by the input that the machine cannot hold: one line, no traceback
        try:
            return super().invoke(ctx)
        except MemoryError as e:
            raise click.ClickException(f"out of memory ({e or 'an allocation failed'})") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
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
