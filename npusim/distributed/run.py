"""The launcher: ``python -m npusim.distributed.run --nproc-per-node N script.py args`` (torchrun-like).

It starts the ranks through the MPI launcher (``mpiexec``, from the ``mpich`` wheel
or the system's MPI). Each rank runs ``script.py`` with torchrun's environment
variables set (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``), so
scripts written for torchrun read what they expect. Several machines: list them in
a hostfile (``--hostfile hosts.txt --nnodes 2``) and run the command on one of them.

A rank that raises ends at once with its traceback and a non-zero status; the MPI
launcher then stops the other ranks, and this command exits with that status.
"""
from __future__ import annotations

import argparse
import os
import runpy
import shutil
import sys
import sysconfig
import traceback

from .rendezvous import launcher_env, load_mpi, mpi_available

_WORKER_FLAG = "--run-as-rank"


def find_mpiexec(explicit: str | None = None) -> str:
    """The MPI launcher: ``--mpiexec``, ``$NPUSIM_MPIEXEC``, the one installed beside this Python (the mpich
    wheel puts it there), or ``mpiexec`` on the PATH."""
    for candidate in (explicit, os.environ.get("NPUSIM_MPIEXEC")):
        if candidate:
            return candidate
    beside = os.path.join(sysconfig.get_path("scripts"), "mpiexec")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("npusim.distributed.run: no mpiexec found. Install an MPI launcher with "
                         "`pip install 'npusim[distributed]'` (or `pip install mpi4py mpich`), or pass --mpiexec.")
    return found


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m npusim.distributed.run",
        description="Start N ranks of a training script per machine through MPI (torchrun-like).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, metavar="N",
                   help="ranks per machine (default 1)")
    p.add_argument("--nnodes", type=int, default=1, metavar="M", help="machines (default 1)")
    hosts = p.add_mutually_exclusive_group()
    hosts.add_argument("--hostfile", metavar="FILE", help="MPI hostfile listing the machines, one per line")
    hosts.add_argument("--hosts", metavar="H1,H2", help="comma-separated machine names")
    p.add_argument("--mpiexec", metavar="PATH", help="the MPI launcher to use (default: found automatically)")
    p.add_argument("--mpiexec-arg", action="append", default=[], metavar="ARG",
                   help="an extra argument for mpiexec (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command instead of running it")
    p.add_argument("-m", "--module", action="store_true", help="run the script argument as a module (python -m)")
    p.add_argument("script", help="the training script (or module, with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def build_command(args) -> list:
    """The mpiexec command line that starts every rank."""
    if args.nproc_per_node < 1 or args.nnodes < 1:
        raise SystemExit("npusim.distributed.run: --nproc-per-node and --nnodes must be at least 1")
    if args.nnodes > 1 and not (args.hostfile or args.hosts):
        raise SystemExit("npusim.distributed.run: --nnodes > 1 needs the machines: pass --hostfile FILE or "
                         "--hosts H1,H2")
    cmd = [find_mpiexec(args.mpiexec), "-n", str(args.nproc_per_node * args.nnodes)]
    if args.hostfile or args.hosts or args.nnodes > 1:
        cmd += ["-ppn", str(args.nproc_per_node)]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    if args.hosts:
        cmd += ["-hosts", args.hosts]
    cmd += list(args.mpiexec_arg)
    cmd += [sys.executable, "-u", "-m", "npusim.distributed.run", _WORKER_FLAG]
    if args.module:
        cmd.append("-m")
    return cmd + [args.script] + list(args.script_args)


def launch(argv=None) -> int:
    """Parse the launcher's arguments and run the job; returns its exit status."""
    args = _parser().parse_args(argv)
    cmd = build_command(args)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    import subprocess
    env = dict(os.environ)
    if args.nproc_per_node > 1 and "OMP_NUM_THREADS" not in env:
        # as torchrun: ranks sharing a machine would otherwise each start a thread per core and oversubscribe it
        env["OMP_NUM_THREADS"] = "1"
        print("npusim.distributed.run: setting OMP_NUM_THREADS=1 for each rank (several share this machine); set "
              "it yourself to tune.", file=sys.stderr)
    try:
        status = subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        status = 130
    if status != 0:
        print(f"npusim.distributed.run: the job failed with exit status {status}: a rank failed (its error is "
              f"above) and the other ranks were stopped.", file=sys.stderr)
    return status


def run_as_rank(argv: list) -> None:
    """Inside one rank: set torchrun's variables from MPI's, then run the script as ``__main__``."""
    if mpi_available():
        load_mpi()      # MPI starts now: the launcher tracks this rank and stops the others if it fails
    env = launcher_env()
    if env is not None:
        os.environ["RANK"] = str(env["rank"])
        os.environ["WORLD_SIZE"] = str(env["world_size"])
        os.environ["LOCAL_RANK"] = str(env["local_rank"])
        os.environ["LOCAL_WORLD_SIZE"] = str(env["local_world_size"])
    as_module = bool(argv) and argv[0] == "-m"
    if as_module:
        argv = argv[1:]
    if not argv:
        raise SystemExit("npusim.distributed.run: no script given")
    target, sys.argv = argv[0], list(argv)
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code != 0:
            if not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
            _exit_now(code)
        raise
    except BaseException:
        rank = os.environ.get("RANK", "?")
        print(f"[rank {rank}] failed:", file=sys.stderr)
        traceback.print_exc()
        _exit_now(1)


def _exit_now(code: int) -> None:
    """Leave without MPI_Finalize (which would wait for the other ranks): the launcher then stops them."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == _WORKER_FLAG:
        run_as_rank(argv[1:])
        return 0
    return launch(argv)


if __name__ == "__main__":
    sys.exit(main())
