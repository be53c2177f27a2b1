"""Yuebing: a distributed KV-cache store for LLM inference.

`MooncakeDistributedStore` and `ReplicateConfig` have the method names, arguments, defaults and
return conventions of Mooncake's classes, so code written for `mooncake.store` runs on Yuebing
(docs/compat.md). The tensor calls (put_tensor, get_tensor, ...) need PyTorch, imported on first use.
"""
from ._yuebing import (BufferHandle, Descriptor, DiskDescriptor, MemoryDescriptor, QueryTaskResponse,
                       ReplicaDescriptor, ReplicateConfig, SoftPinAction, TaskStatus, TaskType, set_log_level)
from ._yuebing import MooncakeDistributedStore as _Store
from ._safetensors import SafetensorsMixin
from ._tensor import TensorMixin


class MooncakeDistributedStore(SafetensorsMixin, TensorMixin, _Store):
    """A client of a Yuebing cluster (or of a master in this process), Mooncake's interface."""


__all__ = ["BufferHandle", "Descriptor", "DiskDescriptor", "MemoryDescriptor", "MooncakeDistributedStore",
           "QueryTaskResponse", "ReplicaDescriptor", "ReplicateConfig", "SoftPinAction", "TaskStatus", "TaskType",
           "set_log_level"]
