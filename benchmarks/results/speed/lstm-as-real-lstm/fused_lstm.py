"""The complex LSTM of qpnlp.nn.recurrent (split gates, per-part products) as torch's real LSTM of twice the width.

With i, f, o = sigma(Re a) + i sigma(Im a), g = tanh(Re a) + i tanh(Im a) and per-part products, every real and
imaginary part is gated like a real LSTM unit, and the complex products W x, W h are real block products on the
interleaved [Re, Im] view (eq. 11 of the complex-order paper): one real LSTM with hidden size 2H, block weights and
the gates reordered (i, f, o, g) -> (i, f, g, o). A scratch check, not library code (not adopted: README.md here).
"""
import torch

from qpnlp.nn.linear import _block_weight

def fused(rnn, x, mask):
    cell = rnn.cell
    H = cell.hidden_size
    wi, bi = cell.input_proj.effective_weight()
    wh, _ = cell.hidden_proj.effective_weight()
    order = [0, 1, 3, 2]
    def re(w):
        return w.reshape(4, H, *w.shape[1:])[order].reshape(w.shape)
    wi, wh, bi = re(wi), re(wh), re(bi)
    if wi.is_complex():
        wi, wh = _block_weight(wi), _block_weight(wh)
        bi = torch.view_as_real(bi).reshape(-1)
        xr = torch.view_as_real(x).reshape(*x.shape[:2], -1)
    else:
        xr = x
    lengths = mask.sum(1)
    packed = torch.nn.utils.rnn.pack_padded_sequence(xr, lengths.cpu(), batch_first=True, enforce_sorted=False)
    B = x.shape[0]
    h0 = xr.new_zeros(1, B, wh.shape[1])
    out, h, c = torch.lstm(packed.data, packed.batch_sizes, (h0, h0), [wi, wh, bi, torch.zeros_like(bi)], True, 1, 0.0, True, False)
    h = h[0][packed.unsorted_indices]
    if x.is_complex():
        h = torch.view_as_complex(h.view(B, H, 2))
    return h

