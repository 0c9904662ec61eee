"""`./dev demo`, the README's first command, runs end to end and tells the seed's story."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_demo_plays_the_three_scenarios_and_cleans_up(tmp_path: Path) -> None:
    folder = tmp_path / "demo-lab"
    result = subprocess.run(
        [sys.executable, "-m", "edgerollout_lab", "demo", "--dir", str(folder)],
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
    # Between steps the demo shows `edgerollout status` for the DaemonSet at hand.
    assert native.count("$ edgerollout status nginx-daemonset -n native\n") == 2
    assert advanced.count("$ edgerollout status nginx-daemonset -n advanced\n") == 3
    assert ota.count("$ edgerollout status nginx-daemonset -n ota\n") == 4
    # The native controller stalls: edge-1 keeps the old pod, the offline pods hang Terminating.
    stalled = native.rsplit("$ edgerollout status", 1)[1]
    assert "Strategy: not managed by edgerollout" in stalled
    assert re.search(r"edge-1\s+Ready\s+\S+\s+old\s+old\n", stalled)
    assert (
        len(re.findall(r"edge-[23]\s+(?:NotReady|Unknown)\s+\S+\s+old\s+terminating\n", stalled))
        == 2
    )
    assert "0 of 3 updated pods are available..." in stalled
    # AdvancedRollingUpdate: edge-1 upgraded while the others wait, then all three.
    waiting = advanced.split("edge-1 is upgraded;", 1)[0].rsplit("$ edgerollout status", 1)[1]
    assert "AdvancedRollingUpdate, max-unavailable 30% (1 of 3 nodes)" in waiting
    assert re.search(r"edge-1\s+Ready\s+\S+\s+current\s+updated\n", waiting)
    assert (
        len(
            re.findall(
                r"edge-[23]\s+(?:NotReady|Unknown)\s+\S+\s+old\s+waiting: node NotReady\n",
                waiting,
            )
        )
        == 2
    )
    assert "1 of 3 updated pods are available (2 waiting for NotReady nodes)..." in waiting
    final = advanced.rsplit("Back online", 1)[1]
    assert len(re.findall(r"edge-[123]\s+Ready\s+\S+\s+current\s+updated\n", final)) == 3
    assert 'daemon set "nginx-daemonset" successfully rolled out' in final
    # OTA through edge-2's agent: only edge-2 is upgraded.
    assert re.search(r"Image pre-pull requested for pod ota/nginx-daemonset-\w+", ota)
    assert re.search(r"Start updating pod ota/nginx-daemonset-\w+", ota)
    pulled = ota.split("The new image is on edge-2", 1)[1].split("$ curl", 1)[0]
    assert re.search(
        r"edge-2\s+Ready\s+\S+\s+old\s+OTA: upgrade available, pre-pull done\n", pulled
    )
    last_table = ota.rsplit("Only edge-2 was upgraded", 1)[1]
    assert re.search(r"edge-2\s+Ready\s+\S+\s+current\s+updated\n", last_table)
    assert (
        len(re.findall(r"edge-[13]\s+Ready\s+\S+\s+old\s+OTA: upgrade available\n", last_table))
        == 2
    )
    assert "1 of 3 pods run the newest revision; 2 nodes have an upgrade available" in last_table
    assert out.rstrip().endswith(f"lab stopped (its files stay in {folder.resolve()})")
    assert not list((folder / "pids").glob("*.json"))
