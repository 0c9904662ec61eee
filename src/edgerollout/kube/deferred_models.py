"""Load kubernetes_asyncio's generated API classes and models only when something uses them.

`import kubernetes_asyncio` runs the package's `__init__`, which imports every generated API class
and model — about 850 modules and 50 MB of memory in every process, while the controller and the
agent use none of them: `kube.api` needs the kubeconfig loaders, `Configuration` and `ApiClient`
(whose bodies it reads raw). `defer()` registers the three packages whose `__init__` does that
(`kubernetes_asyncio`, `.client`, `.client.models`) as empty package modules, so their submodules
import as usual (also as attributes); the first attribute one of them is asked for that is not a
submodule runs the real `__init__` then. Code that uses the generated classes (the lab, the tests)
works unchanged and pays for them on first use.

It must run before anything imports kubernetes_asyncio; the command line calls it first.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

# The kubernetes_asyncio behaviour worked around: these three `__init__` files import every
# generated API class and model (859 modules with the transport, 56 MB of the controller's 105 MB
# at start-up; docs/decisions.md), while the rest of the package imports only what it uses.
PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")


def _deferred(name: str) -> ModuleType | None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    loading = False

    def load_on_use(attribute: str) -> Any:
        nonlocal loading
        if loading:
            raise AttributeError(attribute)
        if importlib.util.find_spec(f"{name}.{attribute}") is not None:
            # A submodule: import just that one, not the package's __init__.
            return importlib.import_module(f"{name}.{attribute}")
        loading = True
        del module.__dict__["__getattr__"]
        assert spec.loader is not None
        spec.loader.exec_module(module)
        return getattr(module, attribute)

    module.__getattr__ = load_on_use  # type: ignore[method-assign]
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def defer() -> None:
    """Install the deferred packages (once, and only if kubernetes_asyncio is not imported yet)."""
    if any(name in sys.modules for name in PACKAGES):
        return
    for name in PACKAGES:
        if _deferred(name) is None:
            return
    # What `from kubernetes_asyncio.client import ApiClient, Configuration` (the kubeconfig
    # loaders) asks for, without the rest of the package.
    from kubernetes_asyncio.client.api_client import ApiClient
    from kubernetes_asyncio.client.configuration import Configuration

    client = sys.modules["kubernetes_asyncio.client"]
    client.ApiClient = ApiClient  # type: ignore[attr-defined]
    client.Configuration = Configuration  # type: ignore[attr-defined]
