r"""Synthetic benchmarks of the gated complex RNN (Wolter & Yao poster, Fig. 4).

Tasks (Arjovsky, Shah & Bengio 2016, "Unitary evolution RNNs"):

adding
    Input (B, T, 2): a value channel uniform in [0, 1] and a marker channel
    with exactly two ones, one in the first and one in the second half.
    Target: the sum of the two marked values, read from the final state.
    Baseline: always predicting 1 gives MSE = Var(U1 + U2) = 1/6 = 0.167.
memory (copy)
    Input (B, T + 20) symbols: 10 data symbols from {1..8}, T - 1 blanks (0), a
    delimiter (9), 10 blanks; one-hot encoded (10 channels). Target: blanks for
    T + 10 steps, then the 10 data symbols. Loss: cross-entropy over all steps
    (9 classes). Baseline (no memory: blanks, then uniform over 8):
    10 log(8) / (T + 20).

Models: cgRNN with modReLU or Hirose and a unitary (``--unitary-mode``,
default ``expm``) or unconstrained ("free") transition, and ``torch.nn.GRU``
with the hidden size whose parameter count is closest to the cgRNN's. Gate:
product for adding and sum for memory (the poster's observation), unless
``--gate`` is given. Readout: a real linear layer on ``[Re h_t, Im h_t]``.
All models see the same batches (one data seed per task). The curves are the
training losses on fresh batches (an unbiased estimate of the test loss);
"final" is the mean of the last ``--final-window`` of them, and "test" is
the loss on one held-out batch of ``--test-size`` sequences at the end.

Defaults (900 steps, batch 50, cgRNN hidden 32, one thread) are sized for a
shared 2-core CPU: about 22 minutes on an idle core, 29 minutes measured under
load. A run closer to the poster: ``--full`` (cgRNN hidden 91 for adding and
250 for memory as in Fig. 4, 10 000 steps; hours on a CPU, use ``--device cuda``).
``--replot`` redraws the PNGs and the table from ``OUT/results.json``.

Usage::

    python benchmarks/cgrnn_synthetic.py                 # defaults, writes benchmarks/results/cgrnn/
    python benchmarks/cgrnn_synthetic.py --steps 3000 --hidden 64 --threads 4
    python benchmarks/cgrnn_synthetic.py --full --device cuda
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from tqdm import tqdm  # noqa: E402

from qpnlp.nn import CGRNN, real_parameter_count  # noqa: E402
from qpnlp.nn import CayleyStepSGD, split_cayley_step_parameters, unitarity_error  # noqa: E402

N_SYMBOLS = 8
COPY_LEN = 10


# ----------------------------------------------------------------------------- data
def adding_batch(batch: int, steps: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, 2) float32 inputs and (B,) targets of the adding problem."""
    values = torch.rand(batch, steps, generator=gen)
    half = steps // 2
    first = torch.randint(0, half, (batch,), generator=gen)
    second = torch.randint(half, steps, (batch,), generator=gen)
    markers = torch.zeros(batch, steps)
    rows = torch.arange(batch)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    target = values[rows, first] + values[rows, second]
    return torch.stack([values, markers], dim=-1), target


def memory_batch(batch: int, steps: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T + 20, 10) one-hot inputs and (B, T + 20) int64 targets of the copy problem."""
    data = torch.randint(1, N_SYMBOLS + 1, (batch, COPY_LEN), generator=gen)
    length = steps + 2 * COPY_LEN
    seq = torch.zeros(batch, length, dtype=torch.long)
    seq[:, :COPY_LEN] = data
    seq[:, COPY_LEN + steps - 1] = N_SYMBOLS + 1  # delimiter
    target = torch.zeros(batch, length, dtype=torch.long)
    target[:, -COPY_LEN:] = data
    return nn.functional.one_hot(seq, N_SYMBOLS + 2).float(), target


TASKS = {
    "adding": dict(batch=adding_batch, d_in=2, d_out=1, baseline=lambda T: 1.0 / 6.0),
    "memory": dict(batch=memory_batch, d_in=N_SYMBOLS + 2, d_out=N_SYMBOLS + 1,
                   baseline=lambda T: COPY_LEN * math.log(N_SYMBOLS) / (T + 2 * COPY_LEN)),
}


# ----------------------------------------------------------------------------- models
class ComplexSeqModel(nn.Module):
    """cgRNN encoder + real linear readout on [Re h, Im h]."""

    def __init__(self, d_in: int, d_out: int, hidden: int, per_step: bool, **cell_kwargs):
        super().__init__()
        self.rnn = CGRNN(d_in, hidden, **cell_kwargs)
        self.head = nn.Linear(2 * hidden, d_out)
        self.per_step = per_step

    def forward(self, x):
        out, h = self.rnn(x)
        feats = out if self.per_step else h
        return self.head(torch.cat([feats.real, feats.imag], dim=-1))


class GRUSeqModel(nn.Module):
    def __init__(self, d_in: int, d_out: int, hidden: int, per_step: bool):
        super().__init__()
        self.rnn = nn.GRU(d_in, hidden, batch_first=True)
        self.head = nn.Linear(hidden, d_out)
        self.per_step = per_step

    def forward(self, x):
        out, h = self.rnn(x)
        return self.head(out if self.per_step else h[-1])


def matching_gru_hidden(d_in: int, d_out: int, target: int) -> int:
    """GRU hidden size whose parameter count (with readout) is closest to ``target``."""
    def count(h):
        return 3 * (h * d_in + h * h + 2 * h) + h * d_out + d_out
    return min(range(1, 4096), key=lambda h: abs(count(h) - target))


def loss_fn(task: str, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if task == "adding":
        return nn.functional.mse_loss(pred.squeeze(-1), target)
    return nn.functional.cross_entropy(pred.reshape(-1, pred.shape[-1]), target.reshape(-1))


# ----------------------------------------------------------------------------- training
def train_one(task, name, model, args, device, T):
    spec = TASKS[task]
    gen = torch.Generator().manual_seed(args.seed)  # same batches for every model
    if args.optimizer == "rmsprop":
        make_opt = lambda ps: torch.optim.RMSprop(ps, lr=args.lr)  # noqa: E731
    else:
        make_opt = lambda ps: torch.optim.Adam(ps, lr=args.lr)  # noqa: E731
    stiefel, other = split_cayley_step_parameters(model)
    opts = [make_opt(other)]
    if stiefel:
        opts.append(CayleyStepSGD(stiefel, lr=args.cayley_lr))
    curve = []
    diverged = False
    start = time.perf_counter()
    bar = tqdm(range(args.steps), desc=f"{task:6s} {name:22s}", leave=True, mininterval=2.0)
    for step in bar:
        x, y = spec["batch"](args.batch_size, T, gen)
        x, y = x.to(device), y.to(device)
        loss = loss_fn(task, model(x), y)
        for o in opts:
            o.zero_grad(set_to_none=True)
        if not torch.isfinite(loss):
            diverged = True
            curve.append(float("nan"))
            bar.write(f"{task} {name}: loss became {loss.item()} at step {step}; stopping this run")
            break
        loss.backward()
        if args.clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for o in opts:
            o.step()
        curve.append(loss.item())
        if step % 10 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
    wall = time.perf_counter() - start
    test_gen = torch.Generator().manual_seed(args.seed + 10_000)
    x, y = spec["batch"](args.test_size, T, test_gen)
    with torch.no_grad():
        test = loss_fn(task, model(x.to(device)), y.to(device)).item() if not diverged else float("nan")
    window = [v for v in curve[-args.final_window:] if math.isfinite(v)]
    result = dict(
        steps_done=len(curve),
        wall_s=round(wall, 1),
        final_train_loss=(sum(window) / len(window)) if window and not diverged else float("nan"),
        test_loss=test,
        diverged=diverged,
        curve=curve,
    )
    if isinstance(model, ComplexSeqModel):
        result["unitarity_error"] = unitarity_error(model.rnn.cell.transition().detach())
    return result


def smooth(values, k):
    out, acc = [], []
    for v in values:
        acc.append(v)
        if len(acc) > k:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=["adding", "memory"], choices=list(TASKS))
    p.add_argument("--T", type=int, default=250, help="sequence length / delay (default 250, as in the poster)")
    p.add_argument("--steps", type=int, default=900, help="training steps per model (default 900)")
    p.add_argument("--batch-size", type=int, default=50, help="default 50 (the poster uses 50)")
    p.add_argument("--hidden", type=int, default=32, help="cgRNN complex hidden size (default 32); GRU matched")
    p.add_argument("--optimizer", choices=["rmsprop", "adam"], default="rmsprop")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--unitary-mode", choices=["expm", "cayley", "cayley_step"], default="expm",
                   help="how the unitary transition is kept unitary (default expm parametrisation)")
    p.add_argument("--cayley-lr", type=float, default=1e-3, help="step of CayleyStepSGD (cayley_step mode)")
    p.add_argument("--gate", choices=["auto", "sum", "prod"], default="auto",
                   help="auto: prod for adding, sum for memory (poster)")
    p.add_argument("--clip", type=float, default=0.0, help="gradient-norm clipping (0 = none, default)")
    p.add_argument("--models", nargs="+",
                   default=["modrelu-unitary", "modrelu-free", "hirose-unitary", "hirose-free", "gru"])
    p.add_argument("--final-window", type=int, default=50)
    p.add_argument("--test-size", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: shared machine)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--full", action="store_true",
                   help="poster-like sizes: hidden 91 (adding) / 250 (memory), 10000 steps; hours on a CPU")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "cgrnn")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the PNGs and the table from OUT/results.json (no training)")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.replot:
        return replot(args.out)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.full:
        args.steps = max(args.steps, 10_000)

    report = dict(config={k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                  torch=torch.__version__, python=platform.python_version(), results={})
    t_all = time.perf_counter()
    for task in args.tasks:
        spec = TASKS[task]
        hidden = (91 if task == "adding" else 250) if args.full else args.hidden
        gate = args.gate if args.gate != "auto" else ("prod" if task == "adding" else "sum")
        per_step = task == "memory"
        baseline = spec["baseline"](args.T)
        task_res = dict(baseline=baseline, gate=gate, hidden_cgrnn=hidden, models={})
        cg_params = None
        for name in args.models:
            torch.manual_seed(args.seed)
            if name == "gru":
                target = cg_params if cg_params is not None else real_parameter_count(
                    ComplexSeqModel(spec["d_in"], spec["d_out"], hidden, per_step))
                gh = matching_gru_hidden(spec["d_in"], spec["d_out"], target)
                model = GRUSeqModel(spec["d_in"], spec["d_out"], gh, per_step)
                info = dict(kind="gru", hidden=gh)
            else:
                act, constraint = name.split("-")
                mode = args.unitary_mode if constraint == "unitary" else "free"
                model = ComplexSeqModel(spec["d_in"], spec["d_out"], hidden, per_step, activation=act,
                                        gate=gate, transition=mode, dtype=torch.complex64)
                info = dict(kind="cgrnn", hidden=hidden, activation=act, transition=mode, gate=gate)
            model.to(device)
            info["params"] = real_parameter_count(model)
            if name != "gru" and cg_params is None:
                cg_params = info["params"]
            tqdm.write(f"[{task}] {name}: hidden={info['hidden']} real parameters={info['params']}")
            res = train_one(task, name, model, args, device, args.T)
            info.update(res)
            task_res["models"][name] = info
            tqdm.write(f"[{task}] {name}: final={info['final_train_loss']:.4f} test={info['test_loss']:.4f} "
                       f"(baseline {baseline:.4f}) in {info['wall_s']}s")
        report["results"][task] = task_res
        plot_task(task, task_res, args)
    report["total_wall_s"] = round(time.perf_counter() - t_all, 1)
    (args.out / "results.json").write_text(json.dumps(report, indent=1))
    table = markdown_table(report, args)
    (args.out / "results.md").write_text(table)
    print(table)


def replot(out: Path):
    report = json.loads((out / "results.json").read_text())
    args = argparse.Namespace(**report["config"])
    args.out = out
    for task, task_res in report["results"].items():
        plot_task(task, task_res, args)
    (out / "results.md").write_text(markdown_table(report, args))


def plot_task(task, task_res, args):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    k = max(1, args.steps // 50)
    for name, info in task_res["models"].items():
        curve = info["curve"]
        label = f"{name} ({info['params']} params)"
        ax.plot(range(1, len(curve) + 1), smooth(curve, k), label=label, lw=1.3)
    ax.axhline(task_res["baseline"], color="k", ls="--", lw=1, label=f"baseline {task_res['baseline']:.3f}")
    ax.set_xlabel("training step")
    ax.set_ylabel("MSE" if task == "adding" else "cross-entropy")
    if task == "memory":
        ax.set_yscale("log")
        ax.set_ylim(0.5 * task_res["baseline"], 10.0)  # curves that blow up leave the plot at the top
    else:
        ax.set_ylim(0.0, 0.5)
    ax.set_title(f"{task} problem, T={args.T} (moving average over {k} steps)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / f"{task}_T{args.T}.png", dpi=120)
    plt.close(fig)


def markdown_table(report, args):
    lines = [
        f"# cgRNN synthetic benchmarks (T={args.T})",
        "",
        f"steps={args.steps}, batch={args.batch_size}, optimizer={args.optimizer} lr={args.lr}, "
        f"unitary mode={args.unitary_mode}, clip={args.clip}, seed={args.seed}, threads={args.threads}, "
        f"torch {report['torch']}, total wall time {report['total_wall_s']} s.",
        "",
        "| task | model | hidden | gate | real params | steps | final train loss (last "
        f"{args.final_window}) | test loss | baseline | wall s | unitarity err |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task, tr in report["results"].items():
        for name, info in tr["models"].items():
            ue = info.get("unitarity_error")
            lines.append(
                f"| {task} | {name} | {info['hidden']} | {info.get('gate', '-')} | {info['params']} | "
                f"{info['steps_done']} | {info['final_train_loss']:.4f} | {info['test_loss']:.4f} | "
                f"{tr['baseline']:.4f} | {info['wall_s']} | {'-' if ue is None else f'{ue:.1e}'} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
