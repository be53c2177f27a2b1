"""`from mooncake.store import MooncakeDistributedStore`, served by Yuebing."""
from yuebing import MooncakeDistributedStore, ReplicateConfig  # noqa: F401
