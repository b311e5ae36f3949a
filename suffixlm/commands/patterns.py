"""``suffixlm patterns [NAME]``: the CRF pattern files shipped with suffixlm.

They are the package data ``suffixlm.corpora/patterns/*.pat`` (the repository folder
``corpora/patterns``), there after a wheel install as in a clone; ``suffixlm crf train
-p NAME`` finds them by name when no file ``NAME`` exists.
"""

from __future__ import annotations

import click


@click.command("patterns")
@click.argument("name", required=False)
@click.option("--path", "show_path", is_flag=True, help="Print the file's path instead of its text.")
def command(name, show_path):
    """List the shipped CRF pattern files (name and the first line of their comment), or
    print the one called NAME (with or without .pat).

    Any of them is `suffixlm crf train -p NAME`'s pattern file when no file NAME exists in
    the current directory; `suffixlm patterns NAME > my.pat` gives a copy to edit.
    """
    from ..corpora import pattern_description, pattern_files

    shipped = pattern_files()
    if name is None:
        if show_path:
            raise click.UsageError("--path needs a NAME")
        width = max((len(n) for n in shipped), default=0)
        for n, path in shipped.items():
            click.echo(f"{n:<{width}}  {pattern_description(path.read_text(encoding='utf-8'))}")
        return
    key = name[:-len(".pat")] if name.endswith(".pat") else name
    if key not in shipped:
        raise click.ClickException(f"no shipped pattern file {name!r} (shipped: {', '.join(shipped)})")
    if show_path:
        click.echo(str(shipped[key]))
    else:
        click.echo(shipped[key].read_text(encoding="utf-8"), nl=False)
