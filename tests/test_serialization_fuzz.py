"""Malformed archives never crash, hang or exhaust memory: they load or raise a clear error.

Thousands of mutated archives (seeded, so a failure reproduces) go through ``npusim.load``: random byte
flips, truncations, insertions and deletions of the whole file; targeted changes to the sizes and
offsets of the ZIP directory and local headers; and mutations of ``data.pkl`` re-zipped with valid
checksums, so they reach the unpickler. Every outcome must be a loaded object or an error that is a
``RuntimeError`` (``ArchiveError``) or ``UnpicklingError`` with a message.

The loop runs in a child process whose address space is capped a couple of GiB above what it uses
at start: an attempt at a giant allocation fails there (as a MemoryError, which counts as a failure)
instead of swapping the machine, and a crash or a hang shows as a bad exit or a timeout.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
CASES = int(os.environ.get("NPUSIM_FUZZ_CASES", "6000"))
SEED = int(os.environ.get("NPUSIM_FUZZ_SEED", "20240601"))

CHILD = r'''
import io, json, os, random, resource, struct, sys, tempfile, time, zipfile
from collections import Counter, OrderedDict

import npusim
from npusim._utils import set_tensor_metadata
from npusim.serialization import ArchiveError, UnpicklingError

cases, seed = int(sys.argv[1]), int(sys.argv[2])

with open("/proc/self/status") as f:  # cap the address space: giant allocations fail instead of swapping
    vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
cap = vm + (2 << 30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

x = npusim.arange(24.0).reshape(4, 6)
meta = npusim.ones(3, device="npu:1")
set_tensor_metadata(meta, {"npu_format": 29})
obj = {"x": x, "col": x[:, 2], "t": x.t(), "i16": npusim.tensor([1, -2, 3], dtype=npusim.int16),
       "bf16": npusim.ones(2, 2, dtype=npusim.bfloat16), "b": npusim.tensor([True, False]),
       "scalar": npusim.tensor(5, dtype=npusim.int64), "empty": npusim.empty(0, 3), "npu": meta,
       "param": npusim.nn.Parameter(npusim.zeros(2)), "storage": npusim.arange(4, dtype=npusim.uint8).untyped_storage(),
       "od": OrderedDict(a=[1, 2.5, "s", None, (True, b"xy")]), "size": npusim.Size([2, 3]), "dtype": npusim.float16,
       "set": {1, 2}, "big": 2 ** 70}
buf = io.BytesIO()
npusim.save(obj, buf, _extra_files={"info.json": '{"k": 1}'})
seed_archive = buf.getvalue()
zin = zipfile.ZipFile(io.BytesIO(seed_archive))
records = {n: zin.read(n) for n in zin.namelist()}
pkl_name = next(n for n in records if n.endswith("/data.pkl"))
cd_at = struct.unpack_from("<I", seed_archive, len(seed_archive) - 6)[0]
entries = []  # offsets of central directory entries
p = cd_at
while seed_archive[p:p + 4] == b"PK\x01\x02":
    n, e, c = struct.unpack_from("<HHH", seed_archive, p + 28)
    entries.append(p)
    p += 46 + n + e + c
local_headers = [struct.unpack_from("<I", seed_archive, q + 42)[0] for q in entries]
EXTREMES = [0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE, 64, 4096]
rng = random.Random(seed)


def rezip(pkl):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, v in records.items():
            z.writestr(n, pkl if n == pkl_name else v)
    return out.getvalue()


def put_u32(data, at, value):
    if 0 <= at <= len(data) - 4:
        data[at:at + 4] = struct.pack("<I", value & 0xFFFFFFFF)


def mutate():
    kind = rng.choice(["flip", "truncate", "insert", "delete", "directory", "local_header", "eocd",
                       "pkl_flip", "pkl_truncate", "pkl_splice", "pkl_ints"])
    data = bytearray(seed_archive)
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == "truncate":
        data = data[:rng.randrange(len(data))]
    elif kind == "insert":
        at = rng.randrange(len(data))
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    elif kind == "delete":
        at = rng.randrange(len(data))
        del data[at:at + rng.randint(1, 128)]
    elif kind == "directory":  # crc, sizes, name/extra lengths or local offset of one entry
        at = rng.choice(entries) + rng.choice([16, 20, 24, 28, 30, 42])
        put_u32(data, at, rng.choice(EXTREMES + [rng.getrandbits(32)]))
    elif kind == "local_header":
        at = rng.choice(local_headers) + rng.choice([0, 8, 14, 18, 22, 26, 28])
        put_u32(data, at, rng.choice(EXTREMES + [rng.getrandbits(32)]))
    elif kind == "eocd":
        at = len(data) - 22 + rng.choice([4, 8, 10, 12, 16, 20])
        put_u32(data, at, rng.choice(EXTREMES + [rng.getrandbits(32)]))
    else:
        pkl = bytearray(records[pkl_name])
        if kind == "pkl_flip":
            for _ in range(rng.randint(1, 4)):
                pkl[rng.randrange(len(pkl))] = rng.randrange(256)
        elif kind == "pkl_truncate":
            pkl = pkl[:rng.randrange(len(pkl))]
        elif kind == "pkl_splice":
            a, b = rng.randrange(len(pkl)), rng.randrange(len(pkl))
            pkl[a:a] = pkl[b:b + rng.randint(1, 40)]
        else:  # an int operand (BININT1/BININT/LONG_BINPUT...) takes an extreme value
            at = rng.randrange(len(pkl) - 5)
            pkl[at + 1:at + 5] = struct.pack("<I", rng.choice(EXTREMES))
        data = bytearray(rezip(bytes(pkl)))
    return kind, bytes(data)


ok, errors, failures = Counter(), Counter(), []
worst, start = 0.0, time.perf_counter()
tmpdir = tempfile.mkdtemp()
for i in range(cases):
    kind, data = mutate()
    t0 = time.perf_counter()
    try:
        if i % 20 == 0:  # some go through a path, memory-mapped
            path = os.path.join(tmpdir, "case.pt")
            with open(path, "wb") as f:
                f.write(data)
            npusim.load(path, mmap=True, _extra_files={"info.json": ""})
        else:
            npusim.load(io.BytesIO(data), _extra_files={"info.json": ""})
        ok[kind] += 1
    except (RuntimeError, UnpicklingError) as e:
        errors[type(e).__name__] += 1
        if not str(e).strip():
            failures.append([kind, i, type(e).__name__, "empty message"])
    except BaseException as e:  # anything else is a bug: MemoryError, IndexError, struct.error, ...
        failures.append([kind, i, type(e).__name__, str(e)[:200]])
    worst = max(worst, time.perf_counter() - t0)
print(json.dumps({"cases": cases, "ok": sum(ok.values()), "errors": dict(errors), "failures": failures[:20],
                  "n_failures": len(failures), "worst_s": worst, "total_s": time.perf_counter() - start}))
'''


def test_mutated_archives_load_or_fail_clearly():
    env = dict(os.environ, PYTHONPATH=str(ROOT), NPUSIM_FALLBACK="silent")
    out = subprocess.run([sys.executable, "-c", CHILD, str(CASES), str(SEED)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, f"the fuzzing process died (exit {out.returncode}):\n{out.stderr[-3000:]}"
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["n_failures"] == 0, report["failures"]
    assert report["ok"] + sum(report["errors"].values()) == CASES
    assert report["ok"] > 0 and report["errors"].get("UnpicklingError", 0) > CASES // 20  # both layers were reached
    assert report["worst_s"] < 2.0, f"one archive took {report['worst_s']:.2f} s to load or reject"
