"""``suffixlm compare``: log-linear models beside Kneser-Ney on the same test text."""

from __future__ import annotations

import json
import time
import warnings

import click

from ..options import INT32_MAX, LM_BASES, LM_PENALTIES, MAX_ORDER, order_text

from .params import FiniteFloat, InputPath, threads_option


def parse_orders(text: str) -> list[int | None]:
    """'2-8' -> [2..8]; '2,3,5' -> [2, 3, 5]; '4' -> [4]; '2-12,max' -> [2..12, None]: each
    order from 1 to ``MAX_ORDER``, or 'max' (unbounded, None, listed last)."""
    out: list[int] = []
    unbounded = False
    try:
        for part in text.split(","):
            part = part.strip()
            if not part:  # '2,,3', '2,' or ',3': a slip, not the orders 2 and 3
                raise click.BadParameter(f"{text!r}: an empty order between commas; expected orders like 2-8 "
                                         "or 2,3,5,max", param_hint="--orders")
            if part.lower() == "max":
                unbounded = True
            elif "-" in part:
                a, b = (int(x) for x in part.split("-", 1))
                if a > b:
                    raise click.BadParameter(f"{text!r}: the range {part} is empty", param_hint="--orders")
                if a < 1 or b > MAX_ORDER:
                    raise click.BadParameter(f"{text!r}: orders must be integers from 1 to {MAX_ORDER}",
                                             param_hint="--orders")
                out.extend(range(a, b + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected orders like 2-8, 2,3,5 or 2-12,max",
                                 param_hint="--orders") from None
    if (not out and not unbounded) or (out and (min(out) < 1 or max(out) > MAX_ORDER)):
        raise click.BadParameter(f"{text!r}: orders must be integers from 1 to {MAX_ORDER} or 'max'",
                                 param_hint="--orders")
    return sorted(set(out)) + ([None] if unbounded else [])


@click.command("compare")
@click.argument("train_file", metavar="TRAIN.txt")
@click.argument("test_file", metavar="TEST.txt")
@click.option("--orders", default="2-5", show_default=True,
              help="Orders to compare, e.g. 2-8, 2,3,5 or 2-12,max ('max': every context back to its sentence "
                   "start; Kneser-Ney there keeps every n-gram, whatever --kn-min-count says).")
@click.option("--penalty", "penalties", multiple=True, type=click.Choice(LM_PENALTIES),
              help="Log-linear penalty (repeat for several). Default: linf-tree.")
@click.option("--lam", "lam_text", default=None,
              help="lambda of the log-linear models, as `suffixlm train --lam`: a number, 'default' "
                   "(1 / training tokens) or 'auto' (chosen on --valid for each order and penalty). "
                   "Default: 'auto' with --valid, else 'default'.")
@click.option("--valid", "valid_file", default=None, metavar="VALID.txt",
              help="Held-out text on which lambda is chosen (--lam auto).")
@click.option("--alpha", type=FiniteFloat(0.0, min_open=True), default=None,
              help="Depth weighting alpha**d of the penalties.")
@click.option("--base", default="kn", show_default=True, type=click.Choice(LM_BASES),
              help="Base measure of the log-linear models, as `suffixlm train --base`: kn (all weights 0 is "
                   "modified KN; the best model measured) or none (the paper's model).")
@click.option("--signed/--positive", default=None,
              help="Weights of either sign or >= 0. Default: --signed with --base kn, else --positive.")
@click.option("--discount", default=0.0, show_default=True, type=FiniteFloat(0.0),
              help="Count-class l1 weights under the tree penalty, as `suffixlm train --discount`.")
@click.option("--epochs", default=2000, show_default=True, type=click.IntRange(1, INT32_MAX),
              help="Maximum epochs of each log-linear model (training stops by convergence first).")
@click.option("--tol", default=1e-6, show_default=True, type=FiniteFloat(0.0),
              help="Stop each fit when the objective's relative decrease stays below this.")
@click.option("--kn/--no-kn", "with_kn", default=True, show_default=True, help="Include our modified Kneser-Ney.")
@click.option("--kn-min-count", default="none", show_default=True,
              help="Cut-offs of the KN models: 'none' (keep all), 'srilm' (SRILM's defaults) or a list like 1,1,2.")
@click.option("--arpa", "arpa_files", multiple=True, type=InputPath(dir_okay=False),
              help="Also score these ARPA files (e.g. SRILM's or KenLM's); repeatable.")
@click.option("--unk/--no-unk", default=True, show_default=True,
              help="Open vocabulary: unseen test words are scored as <unk> (SRILM's -unk, as `suffixlm kn`).")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, help="Write a PNG: perplexity vs order.")
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@threads_option
def command(train_file, test_file, orders, penalties, lam_text, valid_file, alpha, base, signed, discount, epochs, tol,
            with_kn, kn_min_count, arpa_files, unk, plot, as_json, quiet):
    """Train log-linear models and Kneser-Ney for each order on TRAIN.txt and print
    one table of their perplexities on TEST.txt (ppl counts </s>, ppl1 does not).

    The log-linear models take `suffixlm train`'s model options (--base, --signed,
    --lam, --valid, ...) and its defaults: the KN base measure with signed weights, and
    lambda chosen on --valid when it is given."""
    from ..corpus import Corpus, CorpusError, load_training_corpus
    from ..evaluate import score
    from ..model import LogLinearLM
    from .params import check_output, check_text_input, parse_lam
    from .kn import parse_min_counts

    from ..progress import Progress
    from .train import describe_model, fit_lm

    progress = Progress(quiet)
    order_list = parse_orders(orders)
    penalties = penalties or ("linf-tree",)
    if lam_text is None:
        lam_text = "auto" if valid_file is not None else "default"
    lam = parse_lam(lam_text)
    if lam == "auto" and valid_file is None:
        raise click.UsageError("--lam auto needs --valid VALID.txt to choose lambda on")
    if signed is None:
        signed = base == "kn"
    # a bad value fails before any training
    parse_min_counts(kn_min_count, max([o for o in order_list if o is not None] or [1]), "--kn-min-count")
    check_output(plot, [train_file, test_file, valid_file, *arpa_files], binary=True)
    if plot:  # before any training, so a missing matplotlib costs nothing
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise click.ClickException("--plot needs matplotlib (pip install 'suffixlm[plot]')") from None
    for path, what in ((train_file, "the training text"), (test_file, "the test text"),
                       (valid_file, "the validation text")):
        check_text_input(path, what)
    try:
        train = load_training_corpus(train_file, unk=unk)
        test = Corpus.from_text(test_file, train.vocab)
        valid = Corpus.from_text(valid_file, train.vocab) if valid_file else None
    except CorpusError as e:
        raise click.ClickException(str(e)) from None
    from ..backoff.arpa import ArpaError, BackoffLM

    arpa_reports = []  # scored before any training: a bad ARPA file fails at once
    for path in arpa_files:
        try:
            m = BackoffLM.read_arpa(path)
            # score with the ARPA file's own vocabulary
            rep = score(m, Corpus.from_text(test_file, m.vocab), test_file)
        except (ArpaError, CorpusError) as e:
            raise click.ClickException(str(e)) from None
        arpa_reports.append((path, rep, m))
    rows = []

    def add(model_name, order, model, params, seconds):
        rep = score(model, test, test_file)
        rows.append({"model": model_name, "order": order if order is not None else "max", "ppl": rep.ppl,
                     "ppl1": rep.ppl1,
                     "parameters": int(params), "train_seconds": seconds})
        if not quiet:
            click.echo(f"  {model_name:24s} order {order_text(order):>3s}  ppl {rep.ppl:10.3f}  ({seconds:.1f} s)",
                       err=True)

    for order in order_list:
        if with_kn:
            from ..backoff.kn import KneserNeyLM

            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                # at order max KN keeps every n-gram (the suffix tree's closed forms need them)
                cuts = parse_min_counts(kn_min_count, order, "--kn-min-count") if order is not None else [1]
                kn = KneserNeyLM(order=order, modified=True, min_counts=cuts).fit(train)
            for w in caught:
                click.echo(f"warning: order {order_text(order)}: {w.message}", err=True)
            # at order max: the n-grams its ARPA form would list, without building it
            params = kn.model_.n_parameters if order is not None else kn.tree_model_.tree_.stats()["trie_params"]
            add("kn-modified", order, kn, params, time.perf_counter() - t0)
        for pen in penalties:
            t0 = time.perf_counter()
            progress.line(describe_model(order, base, signed, pen, alpha, discount, lam,
                                         train.n_words + train.n_sentences, valid_file))
            lm = LogLinearLM(order=order, penalty=pen, alpha=alpha, max_iter=epochs, tol=tol, base=base,
                             positive=not signed, discount=discount)
            try:
                lm, _ = fit_lm(lm, train, valid, lam, progress)
            except ValueError as e:
                raise click.ClickException(str(e)) from None
            name = ("loglinear " if base == "none" else "loglinear-kn ") + pen + \
                (f" alpha={alpha:g}" if alpha is not None else "") + ("" if signed == (base == "kn") else
                                                                      (" signed" if signed else " positive"))
            add(name, order, lm, lm.n_nonzero_, time.perf_counter() - t0)
    for path, rep, m in arpa_reports:
        rows.append({"model": f"arpa:{path}", "order": m.order, "ppl": rep.ppl, "ppl1": rep.ppl1,
                     "parameters": int(m.n_parameters), "train_seconds": None})

    if as_json:
        click.echo(json.dumps(rows, indent=1))
    else:
        click.echo(f"{'model':40s} {'order':>5s} {'ppl':>10s} {'ppl1':>10s} {'parameters':>11s} {'train s':>8s}")
        for r in rows:
            secs = "" if r["train_seconds"] is None else f"{r['train_seconds']:.1f}"
            click.echo(f"{r['model'][:40]:40s} {str(r['order']):>5s} {r['ppl']:10.3f} {r['ppl1']:10.3f} "
                       f"{r['parameters']:11d} {secs:>8s}")
    if plot:
        fig, ax = plt.subplots(figsize=(6, 4))
        # orders on the x axis in their order, 'max' at the right with a tick of its own
        ticks = sorted({r["order"] for r in rows}, key=lambda o: (o == "max", o if o != "max" else 0))
        x = {o: (o if o != "max" else max([t for t in ticks if t != "max"] or [0]) + 1) for o in ticks}
        for name in dict.fromkeys(r["model"] for r in rows):
            pts = sorted((x[r["order"]], r["ppl"]) for r in rows if r["model"] == name)
            style = "o" if len(pts) == 1 else "-o"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=name)
        ax.set_xticks([x[o] for o in ticks])
        ax.set_xticklabels([str(o) for o in ticks])
        ax.set_xlabel("order")
        ax.set_ylabel("test perplexity")
        ax.legend()
        fig.tight_layout()
        from ..io import atomic_write, write_error_message

        try:
            with atomic_write(plot, inputs=[train_file, test_file, *arpa_files]) as fh:
                fig.savefig(fh, dpi=100, format="png")
        except OSError as e:
            raise click.ClickException(write_error_message(plot, e)) from None
        if not quiet:
            click.echo(f"wrote {plot}", err=True)
