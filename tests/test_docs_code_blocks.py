"""Every code block in README.md and docs/ runs as written.

Each document's blocks run in order in a scratch directory that holds the repository's top-level folders
(as links), so relative paths in commands (``tests/torch_programs/...``, ``bench/...``) work and files a
block writes (checkpoints, traces) stay out of the repository. Conventions:

- a ``python`` block whose first line is ``# NAME.py`` is a file the next commands use: it is written, not run;
- other ``python`` blocks run with ``python -c``; ``bash``/``sh`` blocks run line by line in bash, except
  ``pip install`` lines (the environment under test is installed already);
- ``<!-- not run by the tests: REASON -->`` right before a block skips it, for what needs a GPU, several
  machines, or is the test suite itself;
- ``<!-- the code blocks need torch -->`` anywhere in a document skips it where PyTorch is not installed
  (torch is only ever an optional extra).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
_BLOCK = re.compile(r"(?:<!-- not run by the tests: (?P<why>[^>]*?) -->\s*\n)?```(?P<lang>[\w-]*)\n(?P<code>.*?)```",
                    re.S)
_FILE_HEADER = re.compile(r"#\s*([\w./-]+\.py)\s*\n")


def blocks(document: Path):
    text = document.read_text(encoding="utf-8")
    for m in _BLOCK.finditer(text):
        line = text[:m.start("lang")].count("\n") + 1
        yield line, m.group("lang"), m.group("code"), m.group("why")


def _scratch(tmp_path: Path) -> Path:
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in ("build", "dist"):
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run_shell(code: str, cwd: Path):
    lines = [line for line in code.splitlines() if line.strip() and not line.strip().startswith("#")]
    for line in lines:
        command = re.sub(r"^pip install .*?(&&\s*|$)", "", line.strip())
        if not command:
            continue
        r = subprocess.run(["bash", "-c", command], cwd=cwd, env=_env(), capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, f"{command}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
def test_code_blocks_run_as_written(document, tmp_path):
    if os.environ.get("NPUSIM_TEST_DEVICES"):
        pytest.skip("the documents run once, in the suite's first pass")
    if "<!-- the code blocks need torch -->" in document.read_text(encoding="utf-8"):
        pytest.importorskip("torch", reason=f"{document.name}'s code blocks need torch")
    work = _scratch(tmp_path)
    for line, lang, code, why in blocks(document):
        where = f"{document.name}:{line}"
        if why is not None:
            assert why.strip(), f"{where}: say why the block is not run"
            continue
        if lang == "python":
            header = _FILE_HEADER.match(code)
            if header:
                (work / header.group(1)).write_text(code, encoding="utf-8")
                continue
            r = subprocess.run([sys.executable, "-c", code], cwd=work, env=_env(), capture_output=True, text=True,
                               timeout=600)
            assert r.returncode == 0, f"{where}\n{r.stderr[-3000:]}"
        elif lang in ("bash", "sh", "shell"):
            _run_shell(code, work)
        else:
            assert lang in ("text", "json", "console", ""), f"{where}: unknown block language {lang!r}"
