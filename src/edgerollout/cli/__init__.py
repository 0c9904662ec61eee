from edgerollout.kube import deferred_models

# Before any command module imports kubernetes_asyncio (see deferred_models).
deferred_models.defer()
