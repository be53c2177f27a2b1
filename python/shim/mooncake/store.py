"""`from mooncake.store import ...`, served by Yuebing: every public name of the `yuebing` module
that Mooncake's `mooncake.store` has (MooncakeDistributedStore, ReplicateConfig, SoftPinAction,
ReplicaDescriptor with its MemoryDescriptor / DiskDescriptor / Descriptor, BufferHandle,
TaskType, TaskStatus and QueryTaskResponse for copy and move tasks, MooncakeHostMemAllocator for a
dummy client's buffers)."""
import yuebing
from yuebing import *  # noqa: F401,F403
# Mooncake's private tensor codec helpers, which its structured object store looks up here.
from yuebing import _deserialize_tensor, _serialize_tensor, _tensor_metadata_size  # noqa: F401

__all__ = list(yuebing.__all__)
