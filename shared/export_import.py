"""JSON Lines export and import of memories (``GET /api/memory/export``, ``.../import``).

One line is one :class:`~shared.store.memories.export_import.ImportRow`: the public id, the owner
and every field but the rowid and ``needs_reindex``. Import is idempotent on the public id and keeps
the rows' times; imported rows are marked ``needs_reindex`` and one ``reindex`` job is queued.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import msgspec

from shared.access_policy import Principal, check_row_owner, readable_owners
from shared.control_chars import strip_control_chars
from shared.end_user import checked_end_user
from shared.errors import InvalidRequest
from shared.formats.raw import invalid_json
from shared.jobs.payloads import REINDEX, ReindexPayload
from shared.jobs.queue import JobQueue
from shared.json_numbers import integral_floats_to_int
from shared.memory_api import ExportQuery
from shared.memory_crud import memory_filter
from shared.memory_rules import checked_session, clean_content
from shared.models import MAX_END_USER_CHARS, Memory
from shared.store import Store
from shared.store.memories.admin import MemoryFilter
from shared.store.memories.export_import import ImportRow

#: Rows written per import transaction.
IMPORT_BATCH = 1000
#: Rows read per export query (keyset pagination on the rowid).
EXPORT_BATCH = 500

_line_encoder = msgspec.json.Encoder()


class ImportResult(msgspec.Struct, frozen=True, kw_only=True):
    """Outcome of an import: rows ``written``, rows ``skipped``, ``lines`` read."""

    written: int
    skipped: int
    lines: int


def export_filter(p: Principal, query: ExportQuery) -> MemoryFilter:
    """The filter an export by ``p`` uses (validated before the stream starts).

    Raises:
        NotFound: a client naming another owner.
    """
    requested = query.owner_id if p.admin else (query.owner_id or p.key_id)
    return memory_filter(readable_owners(p, requested), query)


def export_row(m: Memory, context: str = "") -> ImportRow:
    """The export record of ``m`` with its search ``context``.

    Public id as ``id``; rowid and ``needs_reindex`` dropped. The context (the turns around the
    one the memory came from) is exported so that an imported store finds the memory as the
    original did.
    """
    fields = msgspec.structs.asdict(m) | {"context": context}
    kept = {f: fields[f] for f in ImportRow.__struct_fields__ if f != "id"}
    return ImportRow(id=m.public_id, **kept)


async def export_lines(store: Store, flt: MemoryFilter) -> AsyncIterator[bytes]:
    """JSON Lines of every memory matching ``flt`` in rowid order, one chunk per batch.

    Raises:
        StoreError: the database failed (the stream stops).
    """
    async for batch in store.exports.batches(flt, EXPORT_BATCH):
        chunk = bytearray()
        for m, context in batch:
            chunk += _line_encoder.encode(export_row(m, context))
            chunk += b"\n"
        yield bytes(chunk)


def decode_line(line: bytes, line_no: int) -> ImportRow:
    """One import line as a row.

    Raises:
        InvalidRequest (``invalid_import_line``): not a valid memory object, or nested too deeply.
    """
    try:
        value = msgspec.json.decode(line)
        if isinstance(value, dict):  # 2.0 is an integer to JSON Schema (shared.json_numbers)
            value = integral_floats_to_int(value, ImportRow)
        return msgspec.convert(value, ImportRow)
    except msgspec.ValidationError as exc:  # names the field: "... - at `$.relevance`"
        raise InvalidRequest(f"line {line_no}: {exc}", code="invalid_import_line") from exc
    except msgspec.DecodeError as exc:
        reason = invalid_json(exc, line).message  # names a lone surrogate escape as such
        raise InvalidRequest(f"line {line_no}: {reason}", code="invalid_import_line") from exc
    except RecursionError as exc:
        message = f"line {line_no}: nested too deeply"
        raise InvalidRequest(message, code="invalid_import_line") from exc


def checked_row(row: ImportRow, line_no: int) -> ImportRow:
    """``row`` as every write path stores it (:mod:`shared.memory_rules`).

    Content and search context with control characters as spaces (the context keeps its line
    breaks: one line per neighbouring turn); end user and session as the chat routes name
    them (stripped; blank session: none). Key, relevance, times and the ids' characters and
    lengths were checked by :func:`decode_line` (the schema of
    :class:`~shared.store.memories.export_import.ImportRow`). An export of this gateway always
    passes.

    Raises:
        InvalidRequest (``invalid_import_line``): a field breaks its rule (the message names the
            line and the field).
    """
    try:
        return msgspec.structs.replace(
            row,
            content=clean_content(row.content),
            context=strip_control_chars(row.context),
            user_id=checked_end_user(row.user_id, MAX_END_USER_CHARS),
            session_id=checked_session(row.session_id),
        )
    except InvalidRequest as exc:
        raise InvalidRequest(f"line {line_no}: {exc.message}", code="invalid_import_line") from exc


async def import_lines(
    store: Store,
    queue: JobQueue,
    p: Principal,
    lines: AsyncIterator[bytes],
    redact: Callable[[str], str] | None = None,
) -> ImportResult:
    """Import JSON Lines produced by :func:`export_lines`.

    Rows already present under another owner, or clashing with another memory's owner+user+key,
    are skipped. A client may import only rows of its own key id. ``redact`` (the
    sensitive-content redaction, unless the caller asked for verbatim text) is applied to each
    row's ``content`` before it is stored.

    Raises:
        InvalidRequest: a line is not a valid memory object or breaks a rule of
            :func:`checked_row` (nothing after it is imported; earlier batches stay).
            PermissionDenied / NotFound: a client row of another owner.
        StoreError: the database failed.
    """
    written = skipped = line_no = 0
    batch: list[ImportRow] = []
    async for line in lines:
        line_no += 1
        if not line.strip():
            continue
        row = decode_line(line, line_no)
        check_row_owner(p, row.owner_id, line_no)
        row = checked_row(row, line_no)
        if redact is not None:
            row = msgspec.structs.replace(
                row, content=redact(row.content), context=redact(row.context)
            )
        batch.append(row)
        if len(batch) >= IMPORT_BATCH:
            w, s = await store.exports.import_rows(batch)
            written, skipped, batch = written + w, skipped + s, []
    if batch:
        w, s = await store.exports.import_rows(batch)
        written, skipped = written + w, skipped + s
    if written:
        owner = None if p.admin else p.key_id
        await queue.enqueue(REINDEX, ReindexPayload(owner_id=owner, requested_at=time.time()))
    return ImportResult(written=written, skipped=skipped, lines=line_no)
