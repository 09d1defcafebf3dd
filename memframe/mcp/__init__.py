"""memframe for any MCP client: ``memframe mcp`` serves the project's memory (the memory
directory, recall, session notes, team sync) over the Model Context Protocol, and
``memframe install-mcp`` adds it to a client's configuration.

- :mod:`memframe.mcp.memory_tool` — :class:`MemoryCommands`, the Anthropic memory-tool commands
  on the memory directory (no MCP dependency: other front ends can use it);
- :mod:`memframe.mcp.server` — the server on the official ``mcp`` SDK (the ``mcp`` extra);
- :mod:`memframe.mcp.clients` — where each client keeps its MCP configuration, and the entry;
- :mod:`memframe.mcp.reference` — the tool reference in docs/mcp.md, rendered from the schemas.
"""
