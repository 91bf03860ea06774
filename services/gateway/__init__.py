"""The HTTP gateway: chat proxy with memory, management API, MCP server, health."""
