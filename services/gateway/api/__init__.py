"""Management REST API under ``/api`` (memories, search preview, stats, engine, jobs, settings).

:data:`API_ROUTES` is spliced into the gateway's literal routes list; the OpenAPI document
(:mod:`services.gateway.api.openapi`) describes exactly these routes (a test keeps them in sync).
"""

from __future__ import annotations

from starlette.routing import Route

from services.gateway.api import control, engine, events, memories, openapi, settings

API_ROUTES: list[Route] = [
    Route("/api/openapi.json", openapi.openapi_json, methods=["GET"]),
    Route("/api/memory", memories.list_memories, methods=["GET"]),
    Route("/api/memory", memories.create_memory, methods=["POST"]),
    Route("/api/memory", control.forget_memories, methods=["DELETE"]),
    Route("/api/memory/search-preview", memories.search_preview, methods=["POST"]),
    Route("/api/memory/stats", memories.memory_stats, methods=["GET"]),
    Route("/api/memory/export", memories.export_memories, methods=["GET"]),
    Route("/api/memory/import", memories.import_memories, methods=["POST"]),
    Route("/api/memory/bulk-delete", memories.bulk_delete, methods=["POST"]),
    Route("/api/memory/{id}", memories.get_memory, methods=["GET"]),
    Route("/api/memory/{id}", memories.update_memory, methods=["PATCH"]),
    Route("/api/memory/{id}", memories.delete_memory, methods=["DELETE"]),
    Route("/api/engine", engine.engine_status, methods=["GET"]),
    Route("/api/reindex", engine.reindex, methods=["POST"]),
    Route("/api/summarize", engine.summarize, methods=["POST"]),
    Route("/api/keys", control.list_keys, methods=["GET"]),
    Route("/api/keys/{id}", control.update_key, methods=["PATCH"]),
    Route("/api/usage", control.usage, methods=["GET"]),
    Route("/api/settings", settings.get_settings, methods=["GET"]),
    Route("/api/settings", settings.put_settings, methods=["PUT"]),
    Route("/api/events", events.events, methods=["GET"]),
]
