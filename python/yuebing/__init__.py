"""Yuebing: a distributed KV-cache store for LLM inference.

`MooncakeDistributedStore` and `ReplicateConfig` have the method names, arguments, defaults and
return conventions of Mooncake's classes, so code written for `mooncake.store` runs on Yuebing.
"""
from ._yuebing import MooncakeDistributedStore, ReplicateConfig, set_log_level

__all__ = ["MooncakeDistributedStore", "ReplicateConfig", "set_log_level"]
