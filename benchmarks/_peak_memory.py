"""Peak CPU memory added by one pass, measured in a fresh subprocess (Linux).

No library reports the peak CPU memory of torch allocations, hence this small
helper: freed heap memory is returned to the OS (``malloc_trim``), the
high-water mark is reset (``/proc/self/clear_refs``), and the pass's peak is
``VmHWM - VmRSS`` read from ``/proc/self/status``.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from typing import Callable, Sequence

PAGE = 4096   # floor for "nothing measurable"


def _proc_status(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not in /proc/self/status")


def peak_added_bytes(run: Callable[[], None]) -> int:
    """Resident memory (bytes) that ``run()`` adds at its peak, in this process."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before = _proc_status("VmRSS")
    run()
    return _proc_status("VmHWM") - before


def peak_in_subprocess(script: str, arguments: Sequence[str]) -> int:
    """Run ``python script *arguments``, which must print the bytes as its last line."""
    out = subprocess.run([sys.executable, script, *arguments], check=True, capture_output=True, text=True)
    return max(int(out.stdout.strip().splitlines()[-1]), PAGE)
