"""The command line keeps kubernetes_asyncio's generated models unloaded until something uses them."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import edgerollout.cli  # installs the deferral, as every command does
from edgerollout.kube.api import KubeApi  # the transport: kubeconfig loaders, ApiClient
from edgerollout.kube.informer import Informer
generated = sorted(
    name for name in sys.modules
    if name.startswith(("kubernetes_asyncio.client.models.", "kubernetes_asyncio.client.api."))
)
print(len(generated))
from kubernetes_asyncio import client
pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p"))
print(pod.metadata.name, "kubernetes_asyncio.client.models.v1_pod" in sys.modules)
"""


def test_transport_loads_no_generated_module_and_models_load_on_first_use() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["0", "p True"]
