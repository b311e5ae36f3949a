#!/usr/bin/env bash
# Every output whose bytes a refactoring must not change, written by the code in REPO:
# Kneser-Ney ARPA files (full PTB, orders 3, 5 and max, cut-offs and none), pruned models,
# a binary model, SRILM-style perplexity reports (--debug 2, JSON), static and dynamic
# mixtures, best-mix weights, log-linear model files (order 4 and max) and an export,
# CRF model files (owlqn orders 1 and 2 with seen states, sgd-l1, ap) and labellings.
#
#   scripts/identity_outputs.sh REPO_BEFORE /tmp/before
#   scripts/identity_outputs.sh REPO_AFTER /tmp/after
#   diff /tmp/before.md5 /tmp/after.md5 && echo identical
#
# Needs ../shared/corpora (PTB and CoNLL-2000); about 4 minutes on 2 cores with warm
# numba caches, a few more the first time (each OUT compiles into OUT/.numba_cache).
set -euo pipefail
REPO=$(cd "$1" && pwd); OUT=$2
C=$(cd "${SHARED_CORPORA:-$REPO/../shared/corpora}" && pwd)  # one spelling: the reports name it
mkdir -p "$OUT"; cd "$OUT"
export PYTHONPATH=$REPO
# a numba cache of its own: a checkout's cache, filled by whatever ran first, has been seen
# to give a second-order CRF other bits than a fresh compile (NUMBA_CACHE_DIR=... to share one)
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$PWD/.numba_cache}
run() { python -c "import sys; sys.argv[0] = 'suffixlm'; from suffixlm.cli import main; sys.exit(main())" "$@"; }
head -n 20000 "$C/ptb/ptb.train.txt" > small.txt
head -n 1000 "$C/ptb/ptb.valid.txt" > valid.txt
run kn "$C/ptb/ptb.train.txt" --order 5 -o kn5.arpa -q
run kn "$C/ptb/ptb.train.txt" --order 5 --min-count 1 -o kn5nc.arpa -q
run kn small.txt --order max -o knmax.arpa -q
run kn small.txt --order 3 -o kn3s.arpa -q
run prune kn5.arpa -t 1e-7 -o pruned.arpa -q
run prune kn5nc.arpa -t 1e-8 --min-order 3 -o pruned2.arpa -q
run build-binary kn5.arpa kn5.bin -q
run ppl --arpa kn5.arpa "$C/ptb/ptb.test.txt" --debug 2 > ppl_kn5.txt
run ppl --arpa pruned.arpa "$C/ptb/ptb.test.txt" --json > ppl_pruned.json
run ppl kn5.bin "$C/ptb/ptb.test.txt" --json > ppl_bin.json
run ppl --arpa kn5.arpa "$C/ptb/ptb.test.txt" --mix-lm kn3s.arpa --lambda 0.7 --json > ppl_mix.json
run ppl --arpa kn5.arpa "$C/ptb/ptb.test.txt" --mix-lm kn3s.arpa --lambda 0.7 --write-lm mix.arpa -q > /dev/null
run best-mix valid.txt kn5.arpa kn3s.arpa --json > bestmix.json
run train small.txt --order 4 -o ll4.slm -q
run train small.txt --order max -o llmax.slm -q
run export ll4.slm -o ll4.arpa -q
run ppl ll4.slm "$C/ptb/ptb.test.20k.txt" --json > ppl_ll4.json
run ppl llmax.slm "$C/ptb/ptb.test.20k.txt" --json > ppl_llmax.json
run ppl ll4.slm "$C/ptb/ptb.test.20k.txt" --mix-lm kn5.arpa --json > ppl_llmix.json
awk 'BEGIN{n=0} {print} /^$/{n++; if(n>=1500) exit}' "$C/conll2000/train.txt" > crf_train.txt
run crf train -p chunk crf_train.txt crf1.model --maxiter 30 -q
run crf train -p chunk crf_train.txt crf2.model --maxiter 20 --order 2 --states seen -q
run crf train -p chunk crf_train.txt crf3.model --maxiter 10 -a sgd-l1 -q
run crf train -p chunk crf_train.txt crf4.model --maxiter 10 -a ap -q
run crf label -m crf1.model "$C/conll2000/test.txt" > crf1.labels
run crf label -m crf2.model "$C/conll2000/test.txt" > crf2.labels
md5sum -- * > "$OUT.md5"
