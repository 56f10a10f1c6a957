"""python -m npusim.distributed.run: the hostfile is checked before anything starts, each rank's output is relayed
by whole lines (optionally prefixed with its rank, as torchrun's --tee), and Ctrl-C stops the job with status 130.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from npusim.distributed import run

ROOT = Path(__file__).resolve().parents[1]


def _has_mpiexec() -> bool:
    try:
        run.find_mpiexec()
    except SystemExit:
        return False
    return True


needs_mpiexec = pytest.mark.skipif(not _has_mpiexec(), reason="no mpiexec (pip install 'npusim[distributed]')")


def launcher(*args, env=None, text=True) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "npusim.distributed.run", *map(str, args)], capture_output=True,
                          text=text, timeout=120, cwd=ROOT, env=full)


# --- the hostfile ----------------------------------------------------------------------------------------------
SYNTAX = re.escape(run.HOSTFILE_SYNTAX)


@pytest.fixture
def no_mpiexec(monkeypatch):
    """Nothing may start: a bad hostfile is reported before mpiexec runs."""
    monkeypatch.setenv("NPUSIM_MPIEXEC", "/nowhere/mpiexec")

    def refuse(*a, **k):
        raise AssertionError("mpiexec was started")
    monkeypatch.setattr(subprocess, "Popen", refuse)


def test_a_missing_hostfile_is_reported_by_name(no_mpiexec, tmp_path):
    path = tmp_path / "hosts.txt"
    with pytest.raises(SystemExit, match=f"^npusim.distributed.run: --hostfile {re.escape(str(path))}: no such "
                                         f"file$"):
        run.main(["--nnodes", "2", "--hostfile", str(path), "train.py"])


def test_a_hostfile_that_is_a_directory_is_refused(no_mpiexec, tmp_path):
    with pytest.raises(SystemExit, match=f"--hostfile {re.escape(str(tmp_path))}: not a regular file$"):
        run.main(["--nnodes", "2", "--hostfile", str(tmp_path), "train.py"])


@pytest.mark.parametrize("text, line, problem", [
    ("node1\nnode2 slots=2\n", 2, "'slots=2' after the machine name is not user=NAME or binding=SPEC"),
    ("# two machines\n\nnode1:4\nnode2:0\n", 4, "'0' in 'node2:0' is not a positive number of ranks"),
    ("node1:-1\nnode2\n", 1, "'-1' in 'node1:-1' is not a positive number of ranks"),
    ("node1:four\nnode2\n", 1, "'four' in 'node1:four' is not a positive number of ranks"),
    ("node1\nnode2:2 # the big one\n", 2, "'#' after the machine name: one machine per line"),
    ("node1 node2\n", 1, "'node2' after the machine name: one machine per line"),
    ("node1\n:2\n", 2, "':2' is not HOST or HOST:N"),
    ("node1:\nnode2\n", 1, "'node1:' is not HOST or HOST:N"),
    ("node1:2:3\nnode2\n", 1, "'node1:2:3' is not HOST or HOST:N"),
])
def test_a_bad_hostfile_line_is_reported_with_its_number(no_mpiexec, tmp_path, text, line, problem):
    path = tmp_path / "hosts.txt"
    path.write_text(text)
    bad = text.splitlines()[line - 1]
    with pytest.raises(SystemExit, match=f"^npusim.distributed.run: --hostfile {re.escape(str(path))}, line {line}: "
                                         f"{re.escape(problem)} \\({SYNTAX}\\): {re.escape(repr(bad))}$"):
        run.main(["--nnodes", "2", "--hostfile", str(path), "train.py"])


@pytest.mark.parametrize("text, message", [
    ("", "lists no machine"),
    ("# nothing yet\n\n", "lists no machine"),
    ("node1:4\n", "lists 1 machine, fewer than --nnodes 2"),
])
def test_a_hostfile_without_enough_machines_is_refused(no_mpiexec, tmp_path, text, message):
    path = tmp_path / "hosts.txt"
    path.write_text(text)
    with pytest.raises(SystemExit, match=re.escape(message)):
        run.main(["--nnodes", "2", "--hostfile", str(path), "train.py"])


def test_a_binary_hostfile_is_refused(no_mpiexec, tmp_path):
    path = tmp_path / "hosts.txt"
    path.write_bytes(b"\xff\xfe\x00node1\n")
    with pytest.raises(SystemExit, match=f"--hostfile {re.escape(str(path))}: not a text file"):
        run.main(["--nnodes", "2", "--hostfile", str(path), "train.py"])


def test_a_good_hostfile_lists_its_machines(tmp_path):
    path = tmp_path / "hosts.txt"
    path.write_text("# the cluster\n\n  node1:4\nnode2 user=alice\nnode3:2 binding=user:0\n")
    assert run.check_hostfile(str(path), 3) == ["node1", "node2", "node3"]


def test_the_command_line_says_what_is_wrong_without_mpiexec_noise(tmp_path):
    hosts = tmp_path / "hosts.txt"
    r = launcher("--nnodes", "2", "--hostfile", hosts, "train.py", env={"NPUSIM_MPIEXEC": "/nowhere/mpiexec"})
    assert r.returncode == 1
    assert r.stderr == f"npusim.distributed.run: --hostfile {hosts}: no such file\n"
    assert r.stdout == ""


# --- relaying the ranks' output ---------------------------------------------------------------------------------
SPAM = """
    import json, os, sys
    rank = int(os.environ["RANK"])
    for i in range({n}):
        print(json.dumps({{"rank": rank, "i": i, "pad": "x" * (i % 7) * 300}}))
        print(json.dumps({{"rank": rank, "i": i, "stream": "err"}}), file=sys.stderr)
    sys.stdout.write('{{"rank": %d, "last": "no newline"}}' % rank)
"""


def records(text: str, prefix=None):
    """Every line of ``text`` as JSON (with ``prefix(rank)`` stripped first): a merged line fails here."""
    out = []
    for line in text.splitlines():
        if line.startswith("npusim.distributed.run: setting OMP_NUM_THREADS"):
            continue
        if prefix is not None:
            m = re.match(r"^(\[[^\]]*\]:)(.*)$", line)
            assert m, line
            line = m.group(2)
            rec = json.loads(line)
            assert m.group(1) == prefix(rec["rank"]), line
        out.append(json.loads(line))
    return out


@needs_mpiexec
def test_two_ranks_printing_at_once_never_share_a_line(tmp_path):
    script = tmp_path / "spam.py"
    script.write_text(textwrap.dedent(SPAM.format(n=1500)))
    r = launcher("--nproc-per-node", "2", script)
    assert r.returncode == 0, r.stderr[-2000:]
    out, err = records(r.stdout), records(r.stderr)
    for rank in (0, 1):
        assert [rec["i"] for rec in out if rec["rank"] == rank and "i" in rec] == list(range(1500))
        assert [rec["i"] for rec in err if rec["rank"] == rank] == list(range(1500))
        # a last line without its newline still comes out whole
        assert {"rank": rank, "last": "no newline"} in out


@needs_mpiexec
def test_tee_prefixes_each_line_with_its_rank(tmp_path):
    script = tmp_path / "spam.py"
    script.write_text(textwrap.dedent(SPAM.format(n=200)))
    r = launcher("--tee", "3", "--nproc-per-node", "2", script)
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(records(r.stdout, prefix=lambda rank: f"[default{rank}]:")) == 2 * 201
    assert len(records(r.stderr, prefix=lambda rank: f"[default{rank}]:")) == 2 * 200
    # torchrun's template variable and --role; --tee 1: stdout only
    r = launcher("--tee", "1", "--role", "trainer", "--nproc-per-node", "2", script,
                 env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[${role_name} ${rank}]:"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(records(r.stdout, prefix=lambda rank: f"[trainer {rank}]:")) == 2 * 201
    assert len(records(r.stderr)) == 2 * 200


@needs_mpiexec
def test_a_failing_rank_still_fails_the_job(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys\nprint('before', os.environ['RANK'])\nsys.exit(3 if os.environ['RANK'] == '1' "
                      "else 0)\n")
    r = launcher("--nproc-per-node", "2", script)
    assert r.returncode != 0
    assert sorted(r.stdout.splitlines()) == ["before 0", "before 1"]
    assert "npusim.distributed.run: the job failed with exit status" in r.stderr


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@needs_mpiexec
@pytest.mark.parametrize("whom", ["group", "launcher"])
def test_ctrl_c_stops_every_rank_with_status_130(tmp_path, whom):
    script = tmp_path / "sleeper.py"
    marker = f"npusim-sleeper-{os.getpid()}-{whom}"
    script.write_text(f"import os, time\nprint('READY', os.environ['RANK'], flush=True)\ntime.sleep(90)  # {marker}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    # as at a terminal, SIGINT's default action: a suite run as a background job inherits SIGINT ignored (the
    # shell ignores it for asynchronous commands), and a process started with it ignored keeps ignoring it
    p = subprocess.Popen([sys.executable, "-m", "npusim.distributed.run", "--nproc-per-node", "2", str(script)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                         start_new_session=True, preexec_fn=_default_sigint)
    try:
        ready = [p.stdout.readline() for _ in range(2)]
        assert sorted(ready) == ["READY 0\n", "READY 1\n"]
        started = time.monotonic()
        if whom == "group":
            os.killpg(p.pid, signal.SIGINT)     # Ctrl-C at a terminal: the launcher, mpiexec and the ranks
        else:
            p.send_signal(signal.SIGINT)       # the launcher alone
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130
    assert time.monotonic() - started < 30
    assert err.endswith("npusim.distributed.run: interrupted; the ranks were stopped.\n")
    if shutil.which("pgrep"):
        # a stopped rank may take a moment to be reaped on a loaded machine: look until none is left (a rank that
        # survived the signal sleeps 90 s, far past this)
        deadline = time.monotonic() + 20
        while True:
            left = subprocess.run(["pgrep", "-f", str(script)], capture_output=True, text=True).stdout
            if left == "" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert left == "", "ranks survived Ctrl-C"


@needs_mpiexec
def test_progress_bars_redrawn_with_carriage_returns_come_through(tmp_path):
    script = tmp_path / "bar.py"
    script.write_text("import sys\nsys.stdout.write('10%\\r50%\\r100%\\n')\n")
    r = launcher("--tee", "1", script, text=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"[default0]:10%\r[default0]:50%\r[default0]:100%\n"


FAKE_MPIEXEC = """#!{python}
import subprocess, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("mpiexec (Open MPI) 4.1.5")
    sys.exit(0)
if "-outfile-pattern" in args:
    sys.exit("-outfile-pattern is not an option of this mpiexec")
start = args.index({python!r})
sys.exit(max(subprocess.call(args[start:]) for _ in range(int(args[args.index("-n") + 1]))))
"""


def test_another_mpis_mpiexec_relays_the_output_itself(tmp_path):
    fake = tmp_path / "mpiexec"
    fake.write_text(FAKE_MPIEXEC.format(python=sys.executable))
    fake.chmod(0o755)
    script = tmp_path / "hello.py"
    script.write_text("print('hello')\nraise SystemExit(4)\n")
    r = launcher("--tee", "3", "--nproc-per-node", "2", "--mpiexec", fake, script, env={"OMP_NUM_THREADS": "1"})
    assert r.returncode == 4
    assert r.stdout == "hello\nhello\n"
    assert r.stderr.splitlines() == [
        "npusim.distributed.run: --tee needs MPICH's mpiexec (Hydra); lines are not prefixed.",
        "npusim.distributed.run: the job failed with exit status 4: a rank failed (its error is above) and the "
        "other ranks were stopped."]


def test_an_mpiexec_that_cannot_start_is_named(tmp_path):
    r = launcher("--mpiexec", tmp_path / "nowhere" / "mpiexec", tmp_path / "train.py")
    assert r.returncode == 1
    assert r.stderr == f"npusim.distributed.run: cannot start {tmp_path / 'nowhere' / 'mpiexec'}: No such file or " \
                       f"directory\n"
