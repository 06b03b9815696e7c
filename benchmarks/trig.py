"""cos and sin of float32 CPU tensors: torch's kernels against numpy's (qpnlp._trig), at the hot paths' sizes.

Sizes: the distinct rows x d of a QPDN / CNM batch at d = 300 (1,540 x 300), a complex-order batch (32 x 50 x 300)
and a Word2Fun batch of family IV (1,024 pairs x 50), plus the small size where ``qpnlp._trig`` stops sending
tensors to numpy (``NUMPY_MIN_NUMEL``). Both variants are timed interleaved in one run (``_bench.interleaved``);
the table gives torch / numpy per size, and the largest error of each against a float64 reference.

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

from qpnlp import _trig  # noqa: E402

SIZES = {"QPDN/CNM rows (1540, 300)": (1540, 300), "complex-order batch (32, 50, 300)": (32, 50, 300),
         "Word2Fun IV batch (1024, 50)": (1024, 50), "threshold (4096,)": (_trig.NUMPY_MIN_NUMEL,)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} thread(s), {platform.processor()}")
    print("load before:", uptime())
    rows = {}
    for name, shape in SIZES.items():
        x = torch.rand(shape, generator=torch.Generator().manual_seed(0)) * 2 * np.pi
        times = interleaved({"torch": lambda: (torch.cos(x), torch.sin(x)),
                             "numpy": lambda: (_trig._apply(np.cos, x), _trig._apply(np.sin, x))},
                            rounds=args.rounds, log=None)
        c64, s64 = torch.cos(x.double()), torch.sin(x.double())
        err = {k: max(float((c.double() - c64).abs().max()), float((s.double() - s64).abs().max()))
               for k, (c, s) in {"torch": (torch.cos(x), torch.sin(x)),
                                 "numpy": (_trig._apply(np.cos, x), _trig._apply(np.sin, x))}.items()}
        rows[name] = dict(numel=x.numel(), seconds=summary(times), torch_over_numpy=ratio(times, "torch", "numpy"),
                          max_error=err)
        print(f"{name:36s} torch {summary(times)['torch']['median'] * 1e6:8.1f} us  numpy "
              f"{summary(times)['numpy']['median'] * 1e6:8.1f} us  torch/numpy {rows[name]['torch_over_numpy']:5.2f}x"
              f"  max error torch {err['torch']:.1e} numpy {err['numpy']:.1e}")
    print("load after:", uptime())
    if args.json:
        Path(args.json).write_text(json.dumps(dict(threads=args.threads, torch=torch.__version__,
                                                   numpy=np.__version__, sizes=rows), indent=1) + "\n")


if __name__ == "__main__":
    main()
