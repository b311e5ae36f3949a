"""``suffixlm crf train|label|eval|dump``: the command-line face of :class:`crf.CRF`.

Heavy modules (numba kernels) are imported inside the commands so that
``suffixlm --help`` stays fast.
"""

from __future__ import annotations

import os
import time
import warnings

import click

from suffixlm.commands.params import (
    FiniteFloat, InputPath, check_output, checkpoint_options, dask_client, distributed_options, threads_option,
)
from suffixlm.options import INT32_MAX, SEED_MAX

from .solvers import ALGORITHMS, PENALTIES, SOLVERS, names

BATCH = 2000  # sequences labelled per batch (streaming)
MAX_HISTORY = 1000  # L-BFGS memory: 2 * history vectors of the size of the model
MAX_NBEST = 1000  # n-best labellings: an (n_tokens of a batch, n) array
MAX_FEATURES = 2**62  # --max-features: a weight index stays an int64


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


def _pattern_files(ctx, param, value) -> tuple[str, ...]:
    """-p NAME: the file NAME, else the shipped pattern file of that name (one line if neither)."""
    from .patterns import PatternError, resolve_pattern_file

    try:
        return tuple(resolve_pattern_file(v) for v in value)
    except PatternError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


@click.group(name="crf")
def command() -> None:
    """Linear-chain CRFs (Wapiti-style patterns; OWL-QN, L-BFGS, SGD-l1, BCD, SAG, perceptron, FISTA)."""


@command.command()
@click.option("-p", "--patterns", "patterns", multiple=True, type=click.Path(dir_okay=False),
              callback=_pattern_files,
              help="Wapiti/CRF++ pattern file, or the name of one suffixlm ships (`suffixlm patterns`; "
                   "repeatable: several files are concatenated, or are the rounds of --grow).")
@click.option("-a", "--algorithm", type=click.Choice(ALGORITHMS), default=None,
              help="; ".join(f"{s.name}: {s.summary}" + (f", {s.max_iter} passes" if s.max_iter else "")
                             for s in SOLVERS.values()) + ". fista is the default with a tree --penalty.")
@click.option("--penalty", type=click.Choice(PENALTIES), default="l1", show_default=True,
              help="rho1 times: l1, or the l2-tree / linf-tree norm of the nested-window feature subtrees.")
@click.option("--rho1", type=FiniteFloat(0.0), default=None,
              help="Weight of the l1 or tree penalty (default 0.5; 0 for lbfgs, sag, sag-nus).")
@click.option("--rho2", type=FiniteFloat(0.0), default=None,
              help="l2 penalty (rho2/2 ||theta||^2; default 1e-4, and 2 for lbfgs: CRFsuite's c2 = 1).")
@click.option("--devel", type=InputPath(dir_okay=False), default=None,
              help="Development file: progress and stopping use its (Viterbi) error.")
@click.option("--maxiter", type=click.IntRange(0, INT32_MAX), default=0, show_default=True,
              help="Maximum iterations, or passes for sgd-l1, bcd, sag, perceptron (0: the solver's default).")
@click.option("--stopeps", type=FiniteFloat(0.0), default=0.02, show_default=True,
              help="Stop when the objective improves by less than this fraction over the window "
                   "(or, with --devel, its token error varies by less than this many points).")
@click.option("--stopwin", type=click.IntRange(0, INT32_MAX), default=5, show_default=True,
              help="Window of the stopping rule (0: off).")
@click.option("--history", type=click.IntRange(1, MAX_HISTORY), default=5, show_default=True, help="L-BFGS memory.")
@click.option("--max-features", type=click.IntRange(1, MAX_FEATURES), default=None, metavar="N",
              help="Refuse a model of more than N features (default: as many as fit in half the memory, by the "
                   "estimate made during the observation pass, before any weight vector).")
@click.option("--grow", is_flag=True,
              help="Incremental feature set (Lavergne et al. 5.4): one round per -p file, or, with one file, "
                   "rounds by pattern depth (single windows first, then their refinements); a refinement "
                   "enters only where the feature it refines is active.")
@click.option("--init", "init_model", type=InputPath(dir_okay=False), default=None,
              help="Start from this model: train it further, growing it with the -p patterns if any.")
@click.option("--seed", type=click.IntRange(0, SEED_MAX), default=0, show_default=True,
              help="Order of the stochastic solvers.")
@click.option("--order", type=click.IntRange(1, 2), default=None,
              help="1: first order; 2: second order (Sha & Pereira: the state is the label pair; adds the "
                   "label-triple pattern T unless the patterns have a T pattern). Default: 2 with T patterns, "
                   "else 1.")
@click.option("--forbid", default=None, metavar="none|unseen|FILE",
              help="Label pairs no labelling may use, in training and labelling: none, unseen (pairs the "
                   "training labels never have; the default at order 2) or a file of 'PREV LABEL' lines.")
@click.option("--tags", type=click.Choice(["iobes"]), default=None,
              help="iobes: train on the IOB2 chunk labels rewritten as IOBES (S- a chunk of one token, E- the last "
                   "of a longer one), label in IOB2; a few tenths of chunk F1 on CoNLL-2000, about twice the "
                   "labels. Default: the labels as given.")
@click.option("--states", type=click.Choice(["all", "seen"]), default="all", show_default=True,
              help="The labels of each unigram observation's weights: all (every label) or seen (only the labels "
                   "it has in the training data: CRFsuite's default, all_possible_states=False; far fewer weights "
                   "with many labels). Not with --grow or --init.")
@click.option("--transitions", type=click.Choice(["all", "seen"]), default="all", show_default=True,
              help="Label pairs with a transition weight: all, or seen (those that follow in the training data: "
                   "CRFsuite's default, all_possible_transitions=False). seen needs -a owlqn, lbfgs or fista.")
@click.option("--min-freq", type=FiniteFloat(0.0), default=0.0, show_default=True,
              help="CRFsuite's feature.minfreq: an (observation, label) pair whose values sum to less over the "
                   "training data, and a label pair that follows fewer times, has no weight (implies --states "
                   "seen). Needs -a owlqn, lbfgs or fista.")
@threads_option(forward=True)
@checkpoint_options("Not with sag, sag-nus, --grow or --init.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@distributed_options
@click.argument("train", type=InputPath(dir_okay=False, allow_dash=True))
@click.argument("model", type=click.Path(dir_okay=False, allow_dash=True))
def train(patterns, algorithm, penalty, rho1, rho2, devel, maxiter, stopeps, stopwin, history, max_features, grow,
          init_model, seed, order, forbid, tags, states, transitions, min_freq, threads, checkpoint_path,
          checkpoint_every, resume, quiet, workers, scheduler, memory_limit, train, model):
    """Train a CRF on the column file TRAIN (last column = label) and write MODEL."""
    from suffixlm.io import open_error_message, write_error_message
    from suffixlm.commands.params import open_checkpoint, training_interrupts

    from .data import DataError, read_sequences, split_labels
    from .model import CRF, ModelError
    from .patterns import PatternError

    if not patterns and not init_model:
        raise click.UsageError("give a pattern file (-p) or a model to start from (--init)")
    # before any work: the model never replaces the training text, patterns or devel, and can be written
    forbid_file = forbid if forbid not in (None, "none", "unseen") else None
    if forbid_file is not None and not os.path.isfile(forbid_file):
        raise click.BadParameter(f"{forbid_file!r} is not none, unseen or a file of forbidden label pairs",
                                 param_hint="--forbid")
    check_output(model, [train, devel, forbid_file, *patterns], binary=True)
    if algorithm is None:
        algorithm = "owlqn" if penalty == "l1" else "fista"
    if workers is not None or scheduler:
        if not SOLVERS[algorithm].batch:
            raise click.UsageError(f"--workers/--scheduler supports {', '.join(names(batch=True))}, "
                                   f"not --algorithm {algorithm}")
        for flag, given in (("--checkpoint", checkpoint_path is not None), ("--grow", grow), ("--init", init_model)):
            if given:
                raise click.UsageError(f"--workers/--scheduler is not supported with {flag}")
    if checkpoint_path is not None:
        for flag, given in (("--grow", grow), ("--init", init_model), (f"--algorithm {algorithm}",
                                                                        not SOLVERS[algorithm].checkpointable)):
            if given:
                raise click.UsageError(f"--checkpoint is not supported with {flag}")
    # the options that change the model (--maxiter is a cap, --threads a checkpoint keeps)
    context = {"command": "suffixlm crf train", "algorithm": algorithm, "penalty": penalty, "rho1": rho1,
               "rho2": rho2, "stopeps": stopeps, "stopwin": stopwin, "history": history, "seed": seed}
    if order is not None or forbid is not None:  # checkpoints of first-order runs stay as they were
        context.update(order=order, forbid=forbid)
    if states != "all" or transitions != "all" or min_freq:
        context.update(states=states, transitions=transitions, min_freq=min_freq)
    if tags is not None:
        context.update(tags=tags)
    ck = open_checkpoint(checkpoint_path, checkpoint_every, resume, context, model,
                         [None if train == "-" else train, devel, forbid_file, *patterns])
    t0 = time.perf_counter()
    try:
        settings = dict(algorithm=algorithm, penalty=penalty, rho1=rho1, rho2=rho2,
                        max_iter=maxiter or None, stopeps=stopeps, stopwin=stopwin, history=history,
                        seed=seed, threads=threads, verbose=not quiet, max_features=max_features)
        if order is not None or forbid is not None:
            settings.update(order=order, forbid=forbid)
        if tags is not None:  # a model to start from (--init) keeps its own otherwise
            settings.update(tags=tags)
        if states == "seen" or transitions == "seen" or min_freq:
            if grow or init_model:
                raise click.UsageError(f"--states seen, --transitions seen and --min-freq are not supported with "
                                       f"{'--grow' if grow else '--init'} yet")
            settings.update(all_possible_states=states == "all", all_possible_transitions=transitions == "all",
                            min_freq=min_freq)
        if init_model:
            crf = CRF.load(init_model)
            crf.set_params(**settings)
        else:
            crf = CRF(patterns=patterns[0] if len(patterns) == 1 else _concatenated(patterns), **settings)
        crf.check_params()  # a bad combination fails before the data is read
        from suffixlm.progress import Progress, announce_compilation

        from . import _gradient_kernels, _inference_kernels, _order2_kernels

        pairs = (_order2_kernels,) if crf.needs_pair_states() else ()
        announce_compilation(Progress(quiet), _gradient_kernels, _inference_kernels, *pairs)
        seqs = read_sequences(train)
        if not seqs:
            raise DataError(f"{train}: no sequence found (empty file?)")
        X, y = split_labels(seqs)
        n_columns = len(seqs[0][0])
        del seqs  # the rows live on in X
        Xd = yd = None
        if devel:
            dseqs = read_sequences(devel, n_columns=n_columns)
            if not dseqs:
                raise DataError(f"{devel}: no sequence found (empty file?)")
            Xd, yd = split_labels(dseqs)
        from suffixlm.solvers.result import ConvergenceWarning

        with training_interrupts(ck, model), dask_client(workers, scheduler, memory_limit) as client, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the last progress line says "(max_iter)"
            if init_model:  # the loaded model is round 0's starting point; no -p: train it further
                crf.grow(X, y, list(patterns) if grow else [_concatenated(patterns)], Xd, yd)
            elif grow:
                crf.grow(X, y, list(patterns) if len(patterns) > 1 else None, Xd, yd)
            else:
                crf.fit(X, y, Xd, yd, checkpoint=ck, client=client, consume=True)  # X .. yd are ours alone
    except (DataError, PatternError, ModelError, ValueError) as exc:
        raise _fail(exc) from None
    except OSError as exc:  # an input that exists but cannot be read
        raise click.ClickException(open_error_message(getattr(exc, "filename", None) or train, exc)) from None
    try:
        with training_interrupts(ck, model, saving=True):
            crf.save(model)
    except OSError as exc:
        raise click.ClickException(write_error_message(model, exc)) from None
    except ValueError as exc:
        raise _fail(exc) from None
    if ck is not None:
        ck.remove()  # the model it led to is written
    if not quiet:
        click.echo(f"* {crf.n_active_features_} active features of {crf.n_features_}; "
                   f"model written to {model} ({time.perf_counter() - t0:.2f}s)", err=True)


def _concatenated(paths) -> list[str]:
    """The lines of several pattern files, in order, read as every reader reads (a BOM
    skipped; ``\n``, ``\r\n`` and a lone ``\r`` end a line, nothing else: not
    ``str.splitlines``' form feed or U+2028; invalid UTF-8 or a line too long:
    ``InputError`` naming the file and line)."""
    from suffixlm.io import open_error_message, open_input

    lines: list[str] = []
    for p in paths:
        try:
            fh = open_input(p, text=True)
        except OSError as exc:
            raise click.ClickException(open_error_message(p, exc)) from None
        with fh:
            lines.extend(line[:-1] if line.endswith("\n") else line for line in fh)
    return lines


def _label_batch(crf, X, gold, raw, out, post, score, nbest_n, stats, placeholder=None):
    """Decode one batch with the estimator and write it as `label` output; with a
    ``placeholder`` (--force), the gold column holds the forced labels."""
    forced = None
    if placeholder is not None:
        forced = [[None if lab == placeholder else lab for lab in labs] for labs in gold]
        gold = None
    line = 0
    for i, ranked in enumerate(crf.decode(X, nbest_n, posterior=post, scores=score, forced=forced)):
        T = len(X[i])
        for r, (labs, lp, probs) in enumerate(ranked):
            if score:
                out.write(f"# {r} {lp:.6f}\n")
            for t in range(T):
                if score and post:
                    out.write(f"{raw[line + t]}\t{labs[t]}\t{probs[t]:.6f}\n")
                else:
                    out.write(f"{raw[line + t]}\t{labs[t]}\n")
            out.write("\n")
        if gold is not None:
            wrong = sum(1 for a, b in zip(gold[i], ranked[0][0]) if a != b)
            stats[0] += wrong
            stats[1] += T
            stats[2] += wrong > 0
            stats[3] += 1
        line += T


@command.command()
@click.option("-m", "--model", "model_path", required=True, type=InputPath(dir_okay=False),
              help="Model written by `suffixlm crf train`.")
@click.option("--check", is_flag=True, help="Input has the gold label in the last column: report errors.")
@click.option("--no-label", "no_label", is_flag=True,
              help="Input has no gold column: every column is an observation (default: decided by the "
                   "number of columns).")
@click.option("--score", is_flag=True, help="Write '# rank log-probability' before each sequence.")
@click.option("--post", is_flag=True, help="Posterior decoding (max marginal per token) instead of Viterbi.")
@click.option("--nbest", "nbest_n", type=click.IntRange(1, MAX_NBEST), default=1, show_default=True,
              help="Output the N best labellings.")
@click.option("--force", is_flag=True,
              help="Forced decoding (Wapiti's --force): IN's last column holds a label the path must keep, "
                   "or the --unlabelled placeholder where the label is free.")
@click.option("--unlabelled", default="?", show_default=True, metavar="STR",
              help="With --force: the last-column value of a position whose label is free.")
@threads_option(forward=True)
@click.argument("infile", type=click.Path(dir_okay=False, allow_dash=True), default="-")
@click.argument("outfile", type=click.Path(dir_okay=False, allow_dash=True), default="-")
def label(model_path, check, no_label, score, post, nbest_n, force, unlabelled, threads, infile, outfile):
    """Label IN (column file; '-' = stdin) into OUT: every token line followed by a
    tab and the predicted label; a blank line after each sequence.

    If IN has one column more than the training observations, that last column is
    taken as the gold label (kept in the output, so `label` then `eval` scores it).

    With --force that last column is required and holds, at each token, a label the
    output must keep, or the placeholder (--unlabelled, default '?') where the label is
    free: Viterbi and --nbest then give the best paths among the label sequences that
    agree with every given label (as Wapiti's --force, which restricts the lattice the
    same way). Wapiti leaves any label it does not know free; here a label that is
    neither one of the model's nor the placeholder is an error naming its line.
    """
    from .data import open_text
    from .model import CRF, ModelError

    if post and nbest_n > 1:
        raise click.UsageError("--post and --nbest are exclusive")
    if check and no_label:
        raise click.UsageError("--check and --no-label are exclusive")
    if force and (check or no_label or post):
        raise click.UsageError("--force is exclusive with --check, --no-label and --post")
    # before any work: OUT is never one of the inputs, can be written, and is replaced
    # only once labelling succeeded
    check_output(outfile, [infile, model_path])
    try:
        crf = CRF.load(model_path)
    except ModelError as exc:
        raise _fail(exc) from None
    crf.set_params(threads=threads)
    n_obs = crf.space_.n_columns
    if force and unlabelled in crf.space_.label_index:
        raise click.UsageError(f"--unlabelled {unlabelled!r} is one of the model's labels: choose another placeholder")
    stats = [0, 0, 0, 0]
    from suffixlm.io import open_error_message, write_error_message

    try:
        fin = open_text(infile)
    except OSError as exc:
        raise click.ClickException(open_error_message(infile, exc)) from None
    try:
        _label_stream(crf, fin, infile, outfile, model_path, n_obs, no_label, check, force, unlabelled, post, score,
                      nbest_n, stats)
    except OSError as exc:  # the output cannot be written (no space left, a closed pipe is handled by the group)
        raise click.ClickException(write_error_message(outfile, exc)) from None
    if check and stats[1]:
        click.echo(f"token error: {100.0 * stats[0] / stats[1]:.2f}%  "
                   f"sequence error: {100.0 * stats[2] / stats[3]:.2f}%  "
                   f"({stats[1]} tokens, {stats[3]} sequences)", err=True)


def _label_stream(crf, fin, infile, outfile, model_path, n_obs, no_label, check, force, unlabelled, post, score,
                  nbest_n, stats):
    """``crf label``'s loop: the sequences of ``fin`` labelled in batches into ``outfile``."""
    import contextlib

    from suffixlm.io import atomic_write

    from .data import DataError, iter_sequences

    with contextlib.ExitStack() as stack:
        stack.callback(fin.close)
        out = stack.enter_context(atomic_write(outfile, binary=False, inputs=[infile, model_path]))
        try:
            raw: list[str] = []
            X, G = [], []
            has_gold = None
            for start, rows in iter_sequences(fin, infile, raw=raw):
                n = len(rows[0])
                if has_gold is None:
                    if n == n_obs + 1 and not no_label:
                        has_gold = True
                    elif n == n_obs:
                        has_gold = False
                    else:
                        raise DataError(f"{infile}:{start}: {n} columns, the model expects {n_obs} "
                                        f"observation column(s) (+1 optional gold label)")
                    if check and not has_gold:
                        raise DataError(f"{infile}:{start}: --check needs the gold label as an extra last column")
                    if force and not has_gold:
                        raise DataError(f"{infile}:{start}: --force needs the labels (or the placeholder "
                                        f"{unlabelled!r}) as an extra last column")
                if has_gold:
                    X.append([r[:-1] for r in rows])
                    G.append([r[-1] for r in rows])
                    if force:
                        known = crf.space_.label_index
                        for t, r in enumerate(rows):
                            if r[-1] != unlabelled and r[-1] not in known:
                                raise DataError(f"{infile}:{start + t}: forced label {r[-1]!r} is not one of the "
                                                f"model's {len(known)} labels (free positions: {unlabelled!r})")
                else:
                    X.append(rows)
                if len(X) >= BATCH:
                    _label_batch(crf, X, G if has_gold else None, raw, out, post, score, nbest_n, stats,
                                 unlabelled if force else None)
                    X, G, raw[:] = [], [], []
            if X:
                _label_batch(crf, X, G if has_gold else None, raw, out, post, score, nbest_n, stats,
                             unlabelled if force else None)
        except (DataError, ValueError) as exc:
            raise _fail(exc) from None


@command.command(name="eval")
@click.option("--per-label", is_flag=True, help="Also print token/sequence error and per-label P/R/F1.")
@click.argument("infile", type=click.Path(dir_okay=False, allow_dash=True), default="-")
def eval_(per_label, infile):
    """Score `label` output ('... gold predicted' lines): conlleval-style report."""
    from suffixlm.io import open_error_message

    from .data import open_text
    from .evaluate import (
        check_label_columns,
        chunk_scores,
        conlleval_report,
        label_scores,
        read_label_output,
        token_scores,
    )

    try:
        fh = open_text(infile)
    except OSError as exc:
        raise click.ClickException(open_error_message(infile, exc)) from None
    try:
        with fh:
            gold, guess = read_label_output(fh, infile)
        check_label_columns(gold, guess, infile)
    except ValueError as exc:
        raise _fail(exc) from None
    click.echo(conlleval_report(chunk_scores(gold, guess)), nl=False)
    if per_label:
        te, se = token_scores(gold, guess)
        click.echo(f"token error: {te:.2f}%  sequence error: {se:.2f}%")
        for lab, (p, r, f, n) in label_scores(gold, guess).items():
            click.echo(f"{lab:>17}: precision: {p:6.2f}%; recall: {r:6.2f}%; F1: {f:6.2f}  {n}")


@command.command()
@click.argument("model_path", type=InputPath(dir_okay=False))
@click.argument("outfile", type=click.Path(dir_okay=False, allow_dash=True), default="-")
def dump(model_path, outfile):
    """Write the non-zero features of MODEL as text: observation, previous label
    ('#' for unigram features), label, weight (tab-separated): the state features
    (``state_features_``: attribute, label), the label transitions (``transition_features_``,
    written as the observation B of the pure transition pattern, several such patterns
    summed), then label pairs conditioned on an observation (Wapiti's bigram patterns). A
    second-order model's label triples have the two labels before, separated by a space,
    in the previous-label column ('T' for the pure triple pattern)."""
    import contextlib

    from suffixlm.io import atomic_write, write_error_message

    from .model import CRF, ModelError

    check_output(outfile, [model_path])  # before any work
    try:
        crf = CRF.load(model_path)
    except ModelError as exc:
        raise _fail(exc) from None
    try:
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(atomic_write(outfile, binary=False, inputs=[model_path]))
            for (obs, lab), w in crf.state_features_.items():
                out.write(f"{obs}\t#\t{lab}\t{w:.9g}\n")
            for key, w in crf.transition_features_.items():  # (prev, label) or (before, prev, label)
                kind = "B" if len(key) == 2 else "T"
                out.write(f"{kind}\t{' '.join(key[:-1])}\t{key[-1]}\t{w:.9g}\n")
            for key, w in crf.transition_state_features_.items():  # (obs, prev, label) or (obs, before, prev, label)
                out.write(f"{key[0]}\t{' '.join(key[1:-1])}\t{key[-1]}\t{w:.9g}\n")
    except OSError as exc:
        raise click.ClickException(write_error_message(outfile, exc)) from None


