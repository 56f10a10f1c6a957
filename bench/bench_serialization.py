"""Save and load speed of ``npusim.save`` / ``npusim.load`` on ~1 GB of float32 tensors, in one run.

    python bench/bench_serialization.py [--mb 1024] [--repeats 3] [--dir DIR]

Compared with writing/reading the same bytes raw with NumPy (``tofile`` /
``fromfile``, the practical limit: no container, no checksum) and with
``torch.save`` / ``torch.load`` when torch is importable. ``npusim.save`` to a
path is atomic: it fsyncs the file before renaming it into place, so the raw
write is also shown with an fsync (the same durability), and it checksums every
record (CRC-32, on several threads), so it is also shown with checksums off
(``set_crc32_options(False)``). The table shows the median GB/s of each and the
ratios (higher is better for npusim). Use ``--mb 256`` on a machine short of
memory (the run holds about four copies of the data).
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

N_TENSORS = 16


def make_state(total_mb: int):
    """A state dict of N_TENSORS float32 tensors totalling ``total_mb`` MiB (host arrays reused by all sides)."""
    per = total_mb * (1 << 20) // 4 // N_TENSORS
    rng = np.random.default_rng(0)
    arrays = {f"layer{i}.weight": rng.standard_normal(per, dtype=np.float32) for i in range(N_TENSORS)}
    return arrays


def timed(fn) -> float:
    gc.collect()
    if hasattr(os, "sync"):
        os.sync()  # start clean: no case pays for the writeback of the one before
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def raw_write(arrays, path, fsync):
    with open(path, "wb") as f:
        for a in arrays.values():
            a.tofile(f)
        if fsync:
            f.flush()
            os.fsync(f.fileno())


def raw_read(arrays, path):
    with open(path, "rb") as f:
        return [np.fromfile(f, dtype=np.float32, count=a.size) for a in arrays.values()]


def torch_save_synced(state, path):
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def save_without_crc(state, path):
    npusim.serialization.set_crc32_options(False)
    try:
        npusim.save(state, path)
    finally:
        npusim.serialization.set_crc32_options(True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=int, default=1024, help="total tensor data in MiB (default 1024)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dir", default=None, help="directory for the files (default: a temporary one)")
    args = p.parse_args()
    arrays = make_state(args.mb)
    nbytes = sum(a.nbytes for a in arrays.values())
    state = {k: npusim.from_numpy(a) for k, a in arrays.items()}
    tstate = {k: torch.from_numpy(a) for k, a in arrays.items()} if torch is not None else None

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        paths = {k: os.path.join(d, f"{k}.bin") for k in ("raw", "raw_fsync", "npusim", "npusim_nocrc", "torch")}
        cases = {
            "save: raw bytes (numpy tofile)": lambda: raw_write(arrays, paths["raw"], False),
            "save: raw bytes + fsync": lambda: raw_write(arrays, paths["raw_fsync"], True),
            "save: npusim.save (atomic, fsync)": lambda: npusim.save(state, paths["npusim"]),
            "save: npusim.save, crc32 off": lambda: save_without_crc(state, paths["npusim_nocrc"]),
        }
        if torch is not None:
            cases["save: torch.save"] = lambda: torch.save(tstate, paths["torch"])
            cases["save: torch.save + fsync"] = lambda: torch_save_synced(tstate, paths["torch"])
        load_cases = {
            "load: npusim.load": lambda: npusim.load(paths["npusim"]),
            "load: npusim.load(mmap=True) + touch": lambda: [t.sum() for t in npusim.load(paths["npusim"],
                                                                                             mmap=True).values()],
        }
        if torch is not None:
            load_cases["load: torch.load"] = lambda: torch.load(paths["torch"], weights_only=True)
        # the raw file read back is the fsynced one: its pages are in the same state as the archive's
        load_cases["load: raw bytes (numpy fromfile)"] = lambda: raw_read(arrays, paths["raw_fsync"])
        times = {name: [] for name in list(cases) + list(load_cases)}
        for rep in range(args.repeats + 1):
            # interleaved and rotated, so drifting disk speed and the writeback of the case before hit every case alike
            for group in (list(cases.items()), list(load_cases.items())):
                k = rep % len(group)
                for name, fn in group[k:] + group[:k]:
                    elapsed = timed(fn)
                    if rep:  # the first round warms up files, page cache and allocator
                        times[name].append(elapsed)
        check = npusim.load(paths["npusim"])
        assert all(np.array_equal(check[k].numpy(), arrays[k]) for k in arrays), "round trip changed the data"

    gbps = {name: nbytes / statistics.median(ts) / 1e9 for name, ts in times.items()}
    print(f"{nbytes / 2**20:.0f} MiB of float32 in {N_TENSORS} tensors, median of {args.repeats} runs after "
          f"a warm-up, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
          f"(npusim {npusim.__version__}, torch {torch.__version__ if torch else 'not installed'})")
    print(f"{'case':42s} {'GB/s':>7s}")
    for name, v in gbps.items():
        print(f"{name:42s} {v:7.2f}")
    s_np, s_raw, s_raw_sync = (gbps["save: npusim.save (atomic, fsync)"], gbps["save: raw bytes (numpy tofile)"],
                               gbps["save: raw bytes + fsync"])
    l_np, l_raw = gbps["load: npusim.load"], gbps["load: raw bytes (numpy fromfile)"]
    print()
    print(f"save  npusim / raw bytes          {s_np / s_raw:5.2f}x")
    print(f"save  npusim / raw bytes + fsync  {s_np / s_raw_sync:5.2f}x   (same durability; budget >= 0.7x)")
    s_nocrc = gbps["save: npusim.save, crc32 off"]
    print(f"save  npusim, crc32 off / raw + fsync {s_nocrc / s_raw_sync:5.2f}x")
    print(f"load  npusim / raw bytes          {l_np / l_raw:5.2f}x   (budget >= 0.7x)")
    if torch is not None:
        print(f"save  npusim / torch.save         {s_np / gbps['save: torch.save']:5.2f}x")
        print(f"save  npusim / torch.save + fsync {s_np / gbps['save: torch.save + fsync']:5.2f}x")
        print(f"load  npusim / torch.load         {l_np / gbps['load: torch.load']:5.2f}x")


if __name__ == "__main__":
    main()
