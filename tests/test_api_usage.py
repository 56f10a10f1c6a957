"""API-usage logging (SetAPIUsageLogger / _log_api_usage_once): each key reaches a logger at most once per
process, keys used before a logger is set are handed to it, npusim's entry points log their keys, and the
docs list every key the package logs. Process-wide state is checked in fresh subprocesses.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import npusim

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_script(code: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NPUSIM_FALLBACK="silent")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


ONCE_SCRIPT = r'''
import json, warnings
import npusim

first, second, third = [], [], []
npusim._log_api_usage_once("before.logger")
npusim.set_api_usage_logger(first.append)        # hears what came before, once each
npusim._log_api_usage_once("a.key")
npusim._log_api_usage_once("a.key")
npusim.utils.log_api_usage_once("a.key")         # the same function, the same record
npusim.set_api_usage_logger(second.append)
npusim._log_api_usage_once("a.key")               # already used: nobody hears it again
npusim._log_api_usage_once("b.key")
npusim.set_api_usage_logger(None)
npusim._log_api_usage_once("c.key")               # waits for the next logger
npusim.set_api_usage_logger(third.append)

def broken(key):
    raise OSError("disk full")

npusim.set_api_usage_logger(broken)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    npusim._log_api_usage_once("d.key")
    npusim._log_api_usage_once("e.key")
print(json.dumps({"first": first, "second": second, "third": third,
                  "warnings": [str(w.message) for w in caught],
                  "same": npusim.utils.log_api_usage_once is npusim._log_api_usage_once}))
'''


def test_each_key_reaches_a_logger_once_per_process():
    got = run_script(ONCE_SCRIPT)
    assert got["first"] == ["python.import", "before.logger", "a.key"]
    assert got["second"] == ["b.key"]
    assert got["third"] == ["c.key"]
    assert got["warnings"] == ["the API usage logger raised OSError: disk full; npusim goes on (later errors of "
                               "the logger are not reported)"]
    assert got["same"]


ENTRY_POINTS_SCRIPT = r'''
import json, os, tempfile
import npusim

keys = []
npusim.set_api_usage_logger(keys.append)
x = npusim.ones(3, device="npu")
npusim.sort(x)
npusim.nn.Linear(2, 2)
npusim.optim.SGD([npusim.ones(1, requires_grad=True)], lr=0.1)
npusim.utils.data.DataLoader([1, 2, 3])
with npusim.profiler.profile():
    pass
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
npusim.save({"w": npusim.ones(2)}, path)
npusim.load(path)
try:
    from npusim.core.autocast.state import autocast
    autocast("cpu")
except ImportError:
    keys.append("npusim.autocast")   # not built yet: nothing to check
print(json.dumps(keys))
'''


def test_entry_points_log_their_keys():
    keys = run_script(ENTRY_POINTS_SCRIPT)
    assert keys[0] == "python.import"
    assert len(keys) == len(set(keys))
    assert set(keys) == {"python.import", "npusim.npu.init", "npusim.npu.cpu_fallback.aten::sort",
                         "python.nn_module", "python.optimizer", "python.data_loader", "npusim.profiler.profile",
                         "npusim.save", "npusim.load", "npusim.autocast"}


def test_bad_arguments():
    with pytest.raises(TypeError, match="^bad argument type for built-in operation$"):
        npusim._log_api_usage_once(3)
    with pytest.raises(TypeError, match="the logger must be callable or None, not int"):
        npusim.set_api_usage_logger(3)


@pytest.mark.oracle
def test_non_string_key_error_matches_torch(torch):
    with pytest.raises(TypeError) as theirs:
        torch._C._log_api_usage_once(3)
    with pytest.raises(TypeError) as ours:
        npusim._log_api_usage_once(3)
    assert str(ours.value) == str(theirs.value)


def test_docs_list_every_key_the_package_logs():
    docs = (ROOT / "docs" / "api_usage_logging.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", docs, re.M))
    logged = set()
    for path in (ROOT / "npusim").rglob("*.py"):
        logged |= set(re.findall(r"""(?:log_api_usage_once|_note_api_usage)\(\s*["']([^"']+)["']""",
                                 path.read_text()))
    logged.add("npusim.npu.cpu_fallback.<op>")   # built from the op's name
    logged.discard("npusim.npu.cpu_fallback.")
    assert logged <= documented, logged - documented
    assert "Nothing is ever sent anywhere" in docs
