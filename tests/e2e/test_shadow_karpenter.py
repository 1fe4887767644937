"""Shadow mode beside the real Karpenter (issue 14): ``joiner run --dry-run`` and
Karpenter-kwok on one cluster. The scenario runs in tests/fidelity/shadow.py inside a
private network namespace (Karpenter's servers bind every interface); this test checks what
it recorded:

* Joiner wrote nothing: no NodeClaim or Node has a ``joiner`` field manager, no Lease is
  Joiner's, Karpenter's CRDs and the NodePool keep their resourceVersions;
* the shadow report's launches for the batch name the same NodeClaims Karpenter made
  (instance type, capacity type and zone, as multisets).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).resolve().parents[1] / "fidelity" / "shadow.py"


@pytest.mark.timeout(1800)
def test_dry_run_beside_karpenter(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    assert unshare is not None, "unshare (util-linux) is needed to run Karpenter on loopback"
    out = tmp_path / "shadow.json"
    proc = subprocess.run(
        [unshare, "--net", "--map-root-user", "--", "sh", "-c",
         'ip link set lo up 2>/dev/null || true; exec "$@"', "sh",
         sys.executable, str(SCRIPT), str(out)],
        capture_output=True, text=True, timeout=1700, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())

    claims = result["karpenterNodeClaims"]
    assert claims, "Karpenter launched nothing"
    assert all("joiner" not in c["managers"] for c in claims)
    assert "joiner" not in result["nodeManagers"]
    assert not [lease for lease in result["leases"] if "joiner" in lease]
    assert result["versionsAfter"] == result["versionsBefore"]
    assert result["podsUnbound"] == []
    writes = [a for a in result["actions"] if a.get("action") != "launch"]
    assert all(a.get("action") in ("event",) for a in writes), writes

    launches = [a for a in result["actions"] if a.get("action") == "launch"]
    key = ("instanceType", "capacityType", "zone")
    assert Counter(tuple(a[k] for k in key) for a in launches) == Counter(
        tuple(c[k] for k in key) for c in claims
    ), (launches, claims)
