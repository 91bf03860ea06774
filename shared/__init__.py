"""The domain and its adapters, shared by the gateway, the worker and the CLI (no HTTP server).

See ``docs/ARCHITECTURE.md`` for the map of its modules.
"""
