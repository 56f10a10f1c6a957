"""The launcher: ``python -m npusim.distributed.run --nproc-per-node N script.py args`` (torchrun-like).

It starts the ranks through the MPI launcher (``mpiexec``, from the ``mpich`` wheel
or the system's MPI). Each rank runs ``script.py`` with torchrun's environment
variables set (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``), so
scripts written for torchrun read what they expect. Several machines: list them in
a hostfile (``--hostfile hosts.txt --nnodes 2``) and run the command on one of them.

Each rank's stdout and stderr reach this command through a pipe of their own
(``mpiexec -outfile-pattern``, onto FIFOs): it relays them line by line, so two
ranks printing at once never share a line; ``--tee 3`` prefixes every line with
its rank, as torchrun's console does (``[default0]:``).

A rank that raises ends at once with its traceback and a non-zero status; the MPI
launcher then stops the other ranks, and this command exits with that status.
"""
from __future__ import annotations

import argparse
import os
import runpy
import selectors
import shutil
import signal
import string
import sys
import sysconfig
import tempfile
import time
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
    p.add_argument("--tee", "-t", type=int, choices=(0, 1, 2, 3), default=0, metavar="{0,1,2,3}",
                   help="prefix each line of the ranks' stdout (1), stderr (2) or both (3) with its rank, as "
                        "torchrun's console ('[default0]:'; TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE sets another "
                        "template). No log files are written")
    p.add_argument("--role", default="default", help="the role name in the line prefix (default 'default')")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command instead of running it")
    p.add_argument("-m", "--module", action="store_true", help="run the script argument as a module (python -m)")
    p.add_argument("script", help="the training script (or module, with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


HOSTFILE_SYNTAX = ("one machine per line: HOST or HOST:N (N, a positive integer, the ranks it may take), "
                   "optionally followed by user=NAME or binding=SPEC; blank lines and lines starting with '#' "
                   "are skipped")


def check_hostfile(path: str, nnodes: int) -> list:
    """The machines ``path`` lists, after checking what ``mpiexec -f`` would trip on (it would fail in its
    own words, or hang on ``host:-1``), naming the file and line that is wrong."""
    where = f"npusim.distributed.run: --hostfile {path}"
    if not os.path.exists(path):
        raise SystemExit(f"{where}: no such file")
    if not os.path.isfile(path):
        raise SystemExit(f"{where}: not a regular file")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError:
        raise SystemExit(f"{where}: not a text file (expected {HOSTFILE_SYNTAX})") from None
    except OSError as e:
        raise SystemExit(f"{where}: cannot be read: {e.strerror or e}") from None
    hosts = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        first, *rest = text.split()
        host, colon, slots = first.partition(":")
        problem = None
        if not host or (colon and not slots) or ":" in slots:
            problem = f"'{first}' is not HOST or HOST:N"
        elif colon and not (slots.isascii() and slots.isdigit() and int(slots) > 0):
            problem = f"'{slots}' in '{first}' is not a positive number of ranks"
        else:
            for token in rest:
                key, eq, value = token.partition("=")
                if key not in ("user", "binding") or not eq or not value:
                    problem = (f"'{token}' after the machine name is not user=NAME or binding=SPEC" if eq
                               else f"'{token}' after the machine name: one machine per line")
                    break
        if problem is not None:
            raise SystemExit(f"{where}, line {number}: {problem} ({HOSTFILE_SYNTAX}): {line!r}")
        hosts.append(host)
    if not hosts:
        raise SystemExit(f"{where}: lists no machine ({HOSTFILE_SYNTAX})")
    if len(hosts) < nnodes:
        raise SystemExit(f"{where}: lists {len(hosts)} machine{'s' if len(hosts) != 1 else ''}, fewer than "
                         f"--nnodes {nnodes}")
    return hosts


def build_command(args, relay_args=()) -> list:
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
    cmd += list(relay_args)
    cmd += [sys.executable, "-u", "-m", "npusim.distributed.run", _WORKER_FLAG]
    if args.module:
        cmd.append("-m")
    return cmd + [args.script] + list(args.script_args)


class _LineRelay:
    """Each rank's stdout and stderr through a FIFO of its own, relayed here by whole lines.

    mpiexec writes rank ``r``'s output to ``DIR/r.out`` / ``DIR/r.err``
    (``-outfile-pattern``); these are FIFOs this process opened read-write, so
    mpiexec's opens never block and a rank's output never meets another's before
    its line is complete. A line's pieces are kept per rank until its newline.
    """

    def __init__(self, nranks: int, nproc_per_node: int, tee: int, role: str):
        self.dir = tempfile.mkdtemp(prefix="npusim-run-")
        self.selector = selectors.DefaultSelector()    # epoll where there is one: no limit of 1024 descriptors
        template = string.Template(os.environ.get("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")
                                   or "[${role_name}${local_rank}]:")
        self.streams = {}       # fd -> [destination, prefix bytes, pending partial line]
        for rank in range(nranks):
            prefix = template.safe_substitute(role_name=role, rank=rank, local_rank=rank % nproc_per_node).encode()
            for name, dst, bit in (("out", sys.stdout, 1), ("err", sys.stderr, 2)):
                path = os.path.join(self.dir, f"{rank}.{name}")
                os.mkfifo(path, 0o600)
                fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
                self.streams[fd] = [dst, prefix if tee & bit else b"", b""]
                self.selector.register(fd, selectors.EVENT_READ)

    def mpiexec_args(self) -> list:
        return ["-outfile-pattern", os.path.join(self.dir, "%r.out"),
                "-errfile-pattern", os.path.join(self.dir, "%r.err")]

    def _write(self, dst, data: bytes) -> None:
        try:
            dst.flush()
            dst.buffer.write(data)
            dst.buffer.flush()
        except (BrokenPipeError, ValueError):   # our reader went away: keep running the job
            pass

    def _take(self, fd) -> None:
        dst, prefix, pending = entry = self.streams[fd]
        data = pending
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
        # a carriage return ends a piece too: progress bars redraw their line with it
        end = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        entry[2] = data[end:]
        if end:
            lines = data[:end]
            if prefix:
                lines = b"".join(prefix + line for line in lines.splitlines(keepends=True))
            self._write(dst, lines)

    def pump(self, timeout: float) -> None:
        """Relay the complete lines that arrive within ``timeout`` seconds."""
        for key, _ in self.selector.select(timeout):
            self._take(key.fd)

    def close(self) -> None:
        """Relay what is left (a last line without its newline gets one) and remove the FIFOs."""
        for fd, entry in self.streams.items():
            self._take(fd)
            if entry[2]:
                self._write(entry[0], entry[1] + entry[2] + b"\n")
            os.close(fd)
        self.selector.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def launch(argv=None) -> int:
    """Parse the launcher's arguments and run the job; returns its exit status."""
    args = _parser().parse_args(argv)
    cmd = build_command(args)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    if args.hostfile:
        check_hostfile(args.hostfile, args.nnodes)
    import subprocess
    env = dict(os.environ)
    if args.nproc_per_node > 1 and "OMP_NUM_THREADS" not in env:
        # as torchrun: ranks sharing a machine would otherwise each start a thread per core and oversubscribe it
        env["OMP_NUM_THREADS"] = "1"
        print("npusim.distributed.run: setting OMP_NUM_THREADS=1 for each rank (several share this machine); set "
              "it yourself to tune.", file=sys.stderr)
    if not _is_hydra(cmd[0]):
        # another MPI's mpiexec relays the ranks' output itself (lines of two ranks may then mix)
        if args.tee:
            print("npusim.distributed.run: --tee needs MPICH's mpiexec (Hydra); lines are not prefixed.",
                  file=sys.stderr)
        return _report(_run_plain(subprocess, cmd, env))
    relay = _LineRelay(args.nproc_per_node * args.nnodes, args.nproc_per_node, args.tee, args.role)
    try:
        try:
            proc = subprocess.Popen(build_command(args, relay.mpiexec_args()), env=env)
        except OSError as e:
            raise SystemExit(f"npusim.distributed.run: cannot start {cmd[0]}: {e.strerror or e}") from None
        try:
            while proc.poll() is None:
                relay.pump(0.05)
            status = proc.returncode
        except KeyboardInterrupt:
            status = 130
            _stop(proc, relay)
    finally:
        relay.close()
    return _report(status)


def _report(status: int) -> int:
    if status == 130:
        print("npusim.distributed.run: interrupted; the ranks were stopped.", file=sys.stderr)
    elif status != 0:
        print(f"npusim.distributed.run: the job failed with exit status {status}: a rank failed (its error is "
              f"above) and the other ranks were stopped.", file=sys.stderr)
    return status


def _is_hydra(mpiexec: str) -> bool:
    """Whether ``mpiexec`` is MPICH's (Hydra, also Intel MPI's), which takes ``-outfile-pattern``."""
    import subprocess
    try:
        r = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return True     # let the launch itself report what is wrong with it
    return "HYDRA" in r.stdout.upper() or "INTEL(R) MPI" in r.stdout.upper()


def _run_plain(subprocess, cmd, env) -> int:
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        raise SystemExit(f"npusim.distributed.run: cannot start {cmd[0]}: {e.strerror or e}") from None


def _stop(proc, relay) -> None:
    """After Ctrl-C: let mpiexec stop the ranks (a Ctrl-C at the terminal reached it too; ``kill -INT`` of this
    process alone did not), relaying their last words; kill it if it takes long or Ctrl-C comes again."""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            relay.pump(0.05)
    except KeyboardInterrupt:
        pass
    if proc.poll() is None:
        proc.kill()
        proc.wait()


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
