"""Processes facing the outside: the HTTP gateway and the ``mnemogate`` command line."""
