"""Background jobs: payloads, handlers, queues (arq or in-process) and the job context.

See "Job kinds" in ``docs/ARCHITECTURE.md``.
"""
