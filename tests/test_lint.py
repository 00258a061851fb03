"""The lint configuration (ruff.toml) holds on the whole tree: no undefined or unused names,
no syntax errors, imports in order."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_is_clean():
    ruff = shutil.which("ruff") or [sys.executable, "-m", "ruff"]
    cmd = ([ruff] if isinstance(ruff, str) else ruff) + ["check", "--no-cache", "."]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
