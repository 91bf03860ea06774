"""The arq worker process that runs background jobs from Redis."""
