"""``python -m joiner`` runs the same command line as the ``joiner`` script."""

from __future__ import annotations

import subprocess
import sys


def test_python_m_joiner_runs_the_cli():
    done = subprocess.run(
        [sys.executable, "-m", "joiner", "schema", "plan"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    # Without joiner/__main__.py this exits 1 with "No module named joiner.__main__".
    assert "No module named" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert '"title": "Plan"' in done.stdout
