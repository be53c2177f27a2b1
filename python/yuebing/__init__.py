"""Yuebing: a distributed KV-cache store for LLM inference.

`MooncakeDistributedStore` and `ReplicateConfig` have the method names, arguments, defaults and
return conventions of Mooncake's classes, so code written for `mooncake.store` runs on Yuebing
(docs/compat.md). The tensor calls (put_tensor, get_tensor, ...) need PyTorch, imported on first use.
"""
from ._yuebing import (BufferHandle, Descriptor, DiskDescriptor, MemoryDescriptor, MooncakeHostMemAllocator,
                       QueryTaskResponse, ReplicaDescriptor, ReplicateConfig, SoftPinAction, TaskStatus, TaskType, set_log_level)
from ._yuebing import MooncakeDistributedStore as _Store
from ._buffer_pool import BufferLease, BufferPool, RegisteredBufferLease, RegisteredBufferPool
from ._numa import bind_to_numa_node
from ._parallelism import ParallelAxis, ParallelismMixin, ReadTarget, TensorParallelism
from ._safetensors import SafetensorsMixin
from ._tensor import TensorMixin
from ._tensor import deserialize_tensor as _deserialize_tensor  # noqa: F401 (Mooncake's private helpers)
from ._tensor import serialize_tensor as _serialize_tensor  # noqa: F401
from ._tensor import tensor_metadata_size as _tensor_metadata_size  # noqa: F401


class MooncakeDistributedStore(ParallelismMixin, SafetensorsMixin, TensorMixin, _Store):
    """A client of a Yuebing cluster (or of a master in this process), Mooncake's interface."""


__all__ = ["BufferHandle", "BufferLease", "BufferPool", "Descriptor", "DiskDescriptor", "MemoryDescriptor",
           "MooncakeDistributedStore", "MooncakeHostMemAllocator", "ParallelAxis", "QueryTaskResponse", "ReadTarget", "RegisteredBufferLease", "RegisteredBufferPool",
           "ReplicaDescriptor", "ReplicateConfig", "SoftPinAction", "TaskStatus", "TaskType", "bind_to_numa_node",
           "TensorParallelism", "set_log_level"]
