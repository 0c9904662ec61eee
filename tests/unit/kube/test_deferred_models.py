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


def _probe(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


DEFERS_AND_IMPORTS_SUBMODULES = """
import sys
from edgerollout.kube import deferred_models
deferred_models.defer()
print(",".join(name for name in deferred_models.PACKAGES if name in sys.modules))
from kubernetes_asyncio.config import kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.rest import RESTClientObject
import kubernetes_asyncio.watch
print(kube_config.__name__, ApiClient.__module__, Configuration.__module__)
print(RESTClientObject.__module__, kubernetes_asyncio.watch.__name__)
print(sum(name.startswith("kubernetes_asyncio.client.") for name in sys.modules
          if name.rsplit(".", 1)[0] in ("kubernetes_asyncio.client.models",
                                        "kubernetes_asyncio.client.api")))
"""


def test_defers_the_three_package_inits_and_their_submodules_still_import() -> None:
    assert _probe(DEFERS_AND_IMPORTS_SUBMODULES) == [
        "kubernetes_asyncio,kubernetes_asyncio.client,kubernetes_asyncio.client.models",
        "kubernetes_asyncio.config.kube_config kubernetes_asyncio.client.api_client "
        "kubernetes_asyncio.client.configuration",
        "kubernetes_asyncio.client.rest kubernetes_asyncio.watch",
        "0",
    ]


ALREADY_IMPORTED = """
import sys
import kubernetes_asyncio
loaded = sys.modules["kubernetes_asyncio"]
from edgerollout.kube import deferred_models
deferred_models.defer()
print(sys.modules["kubernetes_asyncio"] is loaded, "V1Pod" in vars(kubernetes_asyncio.client))
"""


def test_does_nothing_once_kubernetes_asyncio_is_imported() -> None:
    assert _probe(ALREADY_IMPORTED) == ["True True"]
