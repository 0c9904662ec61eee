"""`edgerollout demo`, the README's first command, runs end to end and tells the seed's story."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_demo_plays_the_three_scenarios_and_cleans_up(tmp_path: Path) -> None:
    folder = tmp_path / "demo-lab"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "edgerollout"), "demo", "--dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr}"
    sections = re.split(r"\n== ", out)
    assert [s.split("\n", 1)[0] for s in sections[1:]] == [
        "1. The problem: a native RollingUpdate with 2 of 3 edge nodes offline",
        "2. AdvancedRollingUpdate: the same change, with edgerollout's controller",
        "3. OTA: the controller marks pods, the node decides when",
    ]
    native, advanced, ota = sections[1:]
    # The native controller stalls: edge-1 keeps the old image, the offline pods hang Terminating.
    assert re.search(r"edge-1\s+Ready\s+\S+\s+nginx:1\.19\.4\s+Running", native)
    assert (
        len(re.findall(r"edge-[23]\s+NotReady\s+\S+\s+nginx:1\.19\.4\s+Terminating", native)) == 2
    )
    # AdvancedRollingUpdate: edge-1 upgraded while the others are offline, then all three.
    assert re.search(r"edge-1\s+Ready\s+\S+\s+nginx:1\.19\.5\s+Running", advanced)
    final = advanced.rsplit("Back online", 1)[1]
    assert len(re.findall(r"edge-[123]\s+Ready\s+\S+\s+nginx:1\.19\.5\s+Running", final)) == 3
    # OTA through edge-2's agent: only edge-2 is upgraded.
    assert re.search(r"Image pre-pull requested for pod ota/nginx-daemonset-\w+", ota)
    assert re.search(r"Start updating pod ota/nginx-daemonset-\w+", ota)
    last_table = ota.rsplit("Only edge-2 was upgraded", 1)[1]
    assert re.search(
        r"edge-2\s+Ready\s+\S+\s+nginx:1\.19\.5\s+Running, PodNeedUpgrade=False", last_table
    )
    assert len(re.findall(r"nginx:1\.19\.4\s+Running, PodNeedUpgrade=True", last_table)) == 2
    assert out.rstrip().endswith(f"lab stopped (its files stay in {folder.resolve()})")
    assert not list((folder / "pids").glob("*.json"))
