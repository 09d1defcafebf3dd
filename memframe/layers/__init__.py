"""Built-in layers, one module each, loaded by dotted name in this order."""

BUILTIN_LAYERS: tuple[str, ...] = (
    "memframe.layers.session_memory:SessionMemoryLayer",
    "memframe.layers.memdir:MemdirLayer",
    "memframe.layers.extract_memories:ExtractMemoriesLayer",
    "memframe.layers.dream:DreamLayer",
    "memframe.layers.magic_docs:MagicDocsLayer",
    "memframe.layers.team_sync:TeamSyncLayer",
)
