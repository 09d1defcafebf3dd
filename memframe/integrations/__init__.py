"""memframe inside other agent frameworks and SDKs.

Each integration is its own module and imports its SDK only when it is imported itself, so
``import memframe`` never needs them:

- :mod:`memframe.integrations.anthropic` — :class:`~memframe.integrations.anthropic.MemoryTool`
  (and its async twin): the Anthropic SDK's client-side memory tool (``memory_20250818``) on
  the project's memory directory, for ``client.beta.messages.tool_runner(...)``. Needs the
  ``anthropic`` extra (``pip install 'memframe[anthropic]'``).
"""
