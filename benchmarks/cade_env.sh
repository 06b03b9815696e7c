#!/usr/bin/env bash
# cade_env.sh GENSIM_FORK_CHECKOUT [VENV]: a Python 3.11 virtual environment in which the PyPI package `cade`
# (CADE, compass-aligned distributional embeddings, Bianchi et al. 2020) runs, for benchmarks/word2fun_heldout.py
# --models cade --cade-venv VENV (default VENV: /tmp/qpnlp-bench-venvs/cade, the benchmark's default).
#
# cade 1.2.0 trains with its authors' fork of gensim 3.6 (the `learn_hidden` switch that freezes the compass), which
# is not on PyPI: clone it first (git clone https://github.com/valedica/gensim). The fork's C sources were generated
# by a Cython too old for Python 3.11, so they are generated again here (Cython < 3), and the two imports that
# Python 3.10 removed from `collections` are pointed at `collections.abc`; nothing else in the fork changes.
# numpy < 1.25 and scipy < 1.12 are the newest releases that the fork's code still runs with.
set -euo pipefail
src=${1:?usage: cade_env.sh GENSIM_FORK_CHECKOUT [VENV]}
venv=${2:-/tmp/qpnlp-bench-venvs/cade}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src"/. "$work"/
cd "$work"
python3.11 -m venv "$venv"
"$venv/bin/pip" install -q "numpy<1.25" "scipy<1.12" "Cython<3" "smart_open<7" six wheel setuptools
for module in gensim/models/word2vec_inner gensim/models/doc2vec_inner gensim/corpora/_mmreader \
              gensim/models/fasttext_inner gensim/models/_utils_any2vec gensim/_matutils; do
    "$venv/bin/cython" "$module.pyx" -o "$module.c"
done
for module in gensim/models/word2vec_corpusfile gensim/models/fasttext_corpusfile gensim/models/doc2vec_corpusfile; do
    "$venv/bin/cython" --cplus "$module.pyx" -o "$module.cpp"
done
sed -i 's/^from collections import Mapping, defaultdict$/from collections import defaultdict\nfrom collections.abc import Mapping/' \
    gensim/corpora/dictionary.py
sed -i 's/collections\.Iterable/collections.abc.Iterable/; 0,/^import collections$/s//import collections\nimport collections.abc/' \
    gensim/utils.py
"$venv/bin/pip" install -q --no-build-isolation .
"$venv/bin/pip" install -q --no-deps cade==1.2.0
cd /                                      # the installed gensim, not the source tree
"$venv/bin/python" -c "from cade.cade import CADE; from gensim.models.word2vec_inner import FAST_VERSION
assert FAST_VERSION >= 0, 'the compiled word2vec routines did not build'
print('cade runs in $venv')"
