"""``python -m npusim run``: run an unmodified PyTorch program with ``torch`` resolved to npusim.

``python -m npusim run [--device-map cuda=npu] SCRIPT [ARGS...]`` and ``... run -m MODULE [ARGS...]`` run the
program as ``python SCRIPT`` / ``python -m MODULE`` would (``__name__ == "__main__"``, ``sys.argv``,
``sys.path[0]``), with ``import torch`` and its submodules answered by npusim (``npusim.torch_alias``).
Exceptions and exit codes pass through unchanged.
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys

USAGE = "python -m npusim run [--device-map TYPE=TYPE[,...]] (SCRIPT | -m MODULE) [ARGS...]"
DESCRIPTION = """\
Run a PyTorch program unmodified, with `import torch` (and every torch.* submodule) resolved to npusim.
The program sees __name__ == "__main__", sys.argv and sys.path as `python SCRIPT` (or `python -m MODULE`)
would give it; its exceptions and exit code pass through.

--device-map cuda=npu makes a program written for CUDA run on the npu: torch.cuda.is_available() is true,
and "cuda", .cuda(), torch.cuda.*, torch.cuda.amp and autocast("cuda") mean the npu. With
NPUSIM_DEVICE_MEMORY=16GiB (for example) it tells, on a machine without that GPU, whether the run fits the
GPU's memory: an allocation past it raises the out-of-memory error a GPU would."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m npusim run", usage=USAGE, description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device-map", metavar="TYPE=TYPE[,...]", default="",
                   help="device types that stand for npusim's: cuda=npu (the program's 'cuda' is the npu)")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module as `python -m MODULE` does")
    return p


def _split(argv: list) -> tuple[list, list]:
    """The runner's own options, and the program with its arguments (everything from SCRIPT or -m MODULE on)."""
    own = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            own.append(a)
            i += 1
        elif a == "--device-map" and i + 1 < len(argv):
            own += argv[i:i + 2]
            i += 2
        elif a.startswith("--device-map="):
            own.append(a)
            i += 1
        elif a == "-m" and i + 1 < len(argv):
            return own + argv[i:i + 2], argv[i + 2:]
        elif a.startswith("-m") and len(a) > 2:   # -mMODULE, as python accepts
            return own + ["-m", a[2:]], argv[i + 1:]
        else:
            return own, argv[i:]
    return own, []


def parse_device_map(text: str) -> dict:
    """``"cuda=npu"`` -> ``{"cuda": "npu"}``; torch's device-type names on the left, npusim's on the right."""
    result = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, target = item.partition("=")
        if not sep or not name or not target:
            raise ValueError(f"--device-map: {item!r} is not TYPE=TYPE (for example cuda=npu)")
        result[name.strip()] = target.strip()
    return result


def main(argv: list) -> int:
    own, program = _split(list(argv))
    parser = _parser()
    args = parser.parse_args(own)
    if args.module is None and not program:
        parser.error("a SCRIPT or -m MODULE to run is required")
    try:
        device_map = parse_device_map(args.device_map)
    except ValueError as e:
        parser.error(str(e))

    from .torch_alias import install
    try:
        install(device_map)
    except (ValueError, RuntimeError) as e:
        parser.error(str(e))

    if args.module is not None:
        # as `python -m MODULE`: the current directory first on the path; runpy sets argv[0] to the file
        sys.argv = [args.module] + program
        sys.path[0] = os.getcwd()
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        return 0
    script = program[0]
    if not os.path.exists(script):
        print(f"python -m npusim run: can't open file {os.path.abspath(script)!r}: [Errno 2] No such file or "
              f"directory", file=sys.stderr)
        return 2
    # as `python SCRIPT`: the script's directory first on the path
    sys.argv = program
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0
