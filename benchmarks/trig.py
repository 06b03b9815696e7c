"""cos and sin of float32 CPU tensors: torch's kernels against numpy's and the compiled loop's (qpnlp._trig).

Sizes: the distinct rows x d of a QPDN / CNM batch at d = 300 (1,540 x 300), a complex-order batch (32 x 50 x 300)
and a Word2Fun batch of family IV (1,024 pairs x 50), plus the small size where ``qpnlp._trig`` stops sending
tensors to numpy (``NUMPY_MIN_NUMEL``). The variants are timed interleaved in one run (``_bench.interleaved``):
torch (two calls), numpy (two ufuncs) and, with numba, the compiled loop (``qpnlp._trig._compiled``: both in one
pass); the table gives torch / numpy and torch / compiled per size, and the largest error of each against a float64
reference.

Run::

    python benchmarks/trig.py --threads 1 --json benchmarks/results/speed/trig.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import interleaved, ratio, summary, uptime  # noqa: E402

from qpnlp import _numba, _trig  # noqa: E402

SIZES = {"QPDN/CNM rows (1540, 300)": (1540, 300), "complex-order batch (32, 50, 300)": (32, 50, 300),
         "Word2Fun IV batch (1024, 50)": (1024, 50), "threshold (4096,)": (_trig.NUMPY_MIN_NUMEL,)}


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} thread(s), {platform.processor()}")
    print("load before:", uptime())
    rows = {}
    for name, shape in SIZES.items():
        x = torch.rand(shape, generator=torch.Generator().manual_seed(0)) * 2 * np.pi
        variants = {"torch": lambda: (torch.cos(x), torch.sin(x)),
                    "numpy": lambda: (_trig._apply(np.cos, x), _trig._apply(np.sin, x))}
        if _numba.HAVE_NUMBA:
            variants["compiled"] = lambda: _trig._compiled(x)
        times = interleaved(variants, rounds=args.rounds, log=None)
        c64, s64 = torch.cos(x.double()), torch.sin(x.double())
        err = {k: max(float((c.double() - c64).abs().max()), float((s.double() - s64).abs().max()))
               for k, (c, s) in ((k, f()) for k, f in variants.items())}
        ratios = {f"torch_over_{k}": ratio(times, "torch", k) for k in variants if k != "torch"}
        rows[name] = dict(numel=x.numel(), seconds=summary(times), **ratios, max_error=err)
        medians = "  ".join(f"{k} {summary(times)[k]['median'] * 1e6:8.1f} us" for k in variants)
        print(f"{name:36s} {medians}  " + "  ".join(f"{k.replace('_over_', '/')} {r:5.2f}x" for k, r in ratios.items())
              + "  max error " + " ".join(f"{k} {e:.1e}" for k, e in err.items()))
    print("load after:", uptime())
    if args.json:
        Path(args.json).write_text(json.dumps(dict(threads=args.threads, torch=torch.__version__,
                                                   numpy=np.__version__, sizes=rows), indent=1) + "\n")


if __name__ == "__main__":
    main()
