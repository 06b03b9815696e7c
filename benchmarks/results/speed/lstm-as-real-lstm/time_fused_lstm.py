import os, sys, time

import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fused_lstm import fused
from qpnlp.nn.recurrent import ComplexRNN
torch.set_num_threads(1)
for D, T in ((300, 10), (300, 30), (50, 10), (50, 30)):
    for dtype in (torch.complex64, torch.float32):
        torch.manual_seed(0)
        rnn = ComplexRNN(D, 128, dtype=dtype)
        B = 32
        x = torch.randn(B, T, D, dtype=dtype)
        lengths = torch.randint(max(1, T // 3), T + 1, (B,)); lengths[0] = T
        mask = torch.arange(T)[None] < lengths[:, None]
        res = {}
        for name, fn in (('scan', lambda: rnn(x, mask)[1]), ('fused', lambda: fused(rnn, x, mask))) * 2:
            ts = []
            for r in range(5):
                t0 = time.process_time()
                for _ in range(5):
                    rnn.zero_grad(); h = fn(); (torch.view_as_real(h) if h.is_complex() else h).sum().backward()
                ts.append((time.process_time() - t0) / 5)
            res.setdefault(name, []).append(sorted(ts)[2])
        s, f = min(res['scan']), min(res['fused'])
        print(f"D={D} T={T} {str(dtype):15s} scan {1000*s:.2f} ms fused {1000*f:.2f} ms  speedup {s/f:.2f}x", flush=True)
