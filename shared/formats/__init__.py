"""Client wire formats the gateway speaks: pure parsing, placement and stream reading.

One module per format (``chat``, ``responses``, ``messages``, ``embeddings``), each exposing a
:class:`shared.formats.base.WireFormat`; :mod:`shared.formats.raw` keeps the caller's JSON values
byte-faithful; :mod:`shared.formats.sse` reads Server-Sent Events. No I/O anywhere in here.
"""
