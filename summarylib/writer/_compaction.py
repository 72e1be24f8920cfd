"""Merging a finished event file's objects on an object store into few, for fast readers.

A URL writer uploads each flush as a new object (see :mod:`summarylib.writer._remote`): right
for upload cost, slow for every later reader (TensorBoard's loader spends about as long on a
small object as on a whole file). :func:`compact_file` rewrites a *finished* file (one whose
``<file>.end`` object exists: ``close()`` uploads it last) so that readers list and read
a few objects instead of thousands.

Layout. A file's objects sort in the order readers must read them::

    <file>.000000000000 ... <file>.<k>   numbered objects, one per upload
    <file>.<k>.compacted                 the numbered objects after the previous merged
                                         object up to and including <k>, concatenated
    <file>.end                           empty; uploaded by close(); never deleted

Merging the numbered objects ``i..k`` uploads ``<file>.<k>.compacted`` (their bytes, in
order) as one new object, checks its size, and then deletes ``i..k`` in one request. A
merged object is never merged again, so each byte is uploaded at most twice in all: once in
its numbered object, once in the merged one. Downloading and re-uploading is what works on
every fsspec store (S3's server-side part copy needs parts of 5 MiB, and flushes are small).

What readers see (TensorBoard's loaders read a run's objects in name order, and its Python
loader, the one that reads ``s3://``, never goes back to a name that sorts before the one it
is reading):

* A reader that starts after a merge reads the merged object, then what follows it: every
  event once.
* A reader that was following the file sits on the last object it listed. The merged object
  sorts *before* every object that was not merged, so it never reads it: no event twice.
  Deleting the object it sits on would stop TensorBoard's Python loader for good (its next
  read fails, and that failure ends its reload thread), so a numbered object is merged only
  once the object after it has been there for ``grace_secs`` (default 60 s): time for every
  live reader to have moved past it. ``<file>.end``, where every reader ends, is never
  deleted. A finished file therefore ends as one merged object plus the empty end object
  (plus, for a merge done by ``close()``, the objects of the last minute).
* A TensorBoard started with ``--reload_multifile=true`` reads every object of a run at
  each reload, not only the latest: if it was following the run, it reads the merged
  object's events a second time (it does not fail). Restart it after a merge.
* Not atomic against every reader: a reader that is *starting* on the file while it is merged
  (between the upload of the merged object and the delete, one request) may read objects that
  are being deleted. Merge files that nobody is loading for the first time at that moment, or
  restart such a TensorBoard.

An interrupted merge is safe to run again: numbered objects that a merged object already
covers are deleted first; nothing is uploaded twice.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import Any

from summarylib.writer._remote import (
    END_SUFFIX,
    MERGED_SUFFIX,
    SEQUENCE_DIGITS,
    ObjectOutput,
    _redacted,
    filesystem,
    is_url,
    merged_object_name,
    object_parts,
    split_url,
)

__all__ = [
    "DEFAULT_GRACE_SECS",
    "MERGED_SUFFIX",
    "CompactionError",
    "FileCompaction",
    "compact",
    "compact_at_close",
    "compact_file",
    "merged_object_name",
    "object_parts",
]

#: How long the object after a numbered one must have existed before that one is merged.
DEFAULT_GRACE_SECS = 60.0
#: Suffix of a merged object, after the sequence number of the last object it holds.
# Bytes the merge holds before it uploads a part (S3's parts are at least 5 MiB): with one
# numbered object read at a time, what a merge holds in memory, however long the file.
_PART_BYTES = 8 << 20


class CompactionError(Exception):
    """A file cannot be merged (not finished, objects missing); the message names its URL."""


@dataclass
class FileCompaction:
    """What :func:`compact_file` did to one event file."""

    #: The event file's URL (the objects' common name).
    url: str
    #: ``"compacted"``, ``"nothing to merge"`` or ``"not finished"``.
    status: str
    objects_before: int = 0
    objects_after: int = 0
    #: Numbered objects merged (or deleted as already merged by an interrupted run).
    merged: int = 0
    #: Numbered objects left because a live reader may still be positioned on them.
    kept_recent: int = 0
    bytes_downloaded: int = 0
    bytes_uploaded: int = 0
    #: The merged object written, if any.
    written: list[str] = field(default_factory=list)


def _modified(info: dict[str, Any]) -> float | None:
    # Stores name the time differently: s3fs "LastModified", memory "created", gcsfs
    # "updated" (text), local "mtime".
    for key in ("LastModified", "last_modified", "updated", "mtime", "created"):
        value = info.get(key)
        if isinstance(value, datetime.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=datetime.timezone.utc)
            return value.timestamp()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def _objects_of(infos: dict[str, dict[str, Any]], base: str) -> tuple[
        dict[int, str], dict[int, str], str | None]:
    """``(numbered, merged, end)`` objects of the file ``base``: seq -> path, path or None."""
    numbered: dict[int, str] = {}
    merged: dict[int, str] = {}
    end = None
    for path in infos:
        if not path.startswith(base + "."):
            continue
        rest = path[len(base):]
        if rest == END_SUFFIX:
            end = path
            continue
        parts = object_parts(path)
        if parts is not None and parts[0] == base:
            (merged if parts[2] else numbered)[parts[1]] = path
    return numbered, merged, end


def compact_file(
    fs: Any,
    base: str,
    url: str,
    *,
    grace_secs: float = DEFAULT_GRACE_SECS,
    assume_finished: bool = False,
    modified: dict[str, float] | None = None,
    now: float | None = None,
    infos: dict[str, dict[str, Any]] | None = None,
    keep_end: bool = True,
) -> FileCompaction:
    """Merge the objects of the event file ``base`` (a path of ``fs``) as the module says.

    Args:
      fs: the fsspec filesystem.
      base: the file's path in ``fs`` (its objects are ``base.<seq>``, ``base.end``, ...).
      url: the file's URL, for messages (never the filesystem's options).
      grace_secs: merge a numbered object only once the object after it is this old (an
        object whose time neither ``modified`` nor the store gives is never old enough,
        unless this is 0).
      assume_finished: merge a file without its end object (its writer is gone for good,
        e.g. a crashed process). Never for a file still being written: a live writer's
        later objects would sort after the merged one, fine, but its readers are not
        protected by the end object.
      modified: upload times (``time.time()``) by path, known to the caller (the writer);
        other objects' times come from the store's listing.
      now: the current time (default ``time.time()``), on the clock of ``modified``.
      infos: the listing of ``base``'s directory (path -> fsspec info), if already made.
      keep_end: False also deletes the end object once every numbered object is merged,
        leaving only merged objects (one, unless the file was merged in stages). Only when
        no TensorBoard that loaded the file before is still running: its loader sits on
        that object and stops reloading once it vanishes.

    Raises:
      CompactionError: the file is not finished, or numbered objects are missing.
      OSError: the store failed (the message names ``url``).
    """
    if infos is None:
        directory = base.rpartition("/")[0]
        fs.invalidate_cache(directory)
        infos = {i["name"]: i for i in fs.ls(directory, detail=True)}
    numbered, merged, end = _objects_of(infos, base)
    report = FileCompaction(url, "nothing to merge")
    report.objects_before = report.objects_after = (
        len(numbered) + len(merged) + (end is not None))
    if not numbered and (keep_end or end is None or not merged):
        return report  # merged already (or not a file of ours): as it is
    if numbered and end is None and not assume_finished:
        report.status = "not finished"
        raise CompactionError(
            f"{url} is still being written (no {url}{END_SUFFIX} object, which close() "
            "uploads last); if its writer is gone for good, pass assume_finished "
            "(--assume-finished)")
    last_merged = max(merged, default=-1)
    stale = sorted(s for s in numbered if s <= last_merged)  # an interrupted merge's
    remaining = sorted(s for s in numbered if s > last_merged)
    expected = list(range(last_merged + 1, last_merged + 1 + len(remaining)))
    if remaining != expected:
        gap = next(s for s in expected if s not in numbered)
        raise CompactionError(
            f"{url}: object {url}.{gap:0{SEQUENCE_DIGITS}d} is missing; nothing merged")
    when = dict(modified or {})
    now = time.time() if now is None else now

    def old(path: str | None) -> bool:
        if path is None:  # no end object (assume_finished): nothing follows the last one
            return True
        t = when.get(path)
        if t is None:
            t = _modified(infos[path])
        return grace_secs <= 0 or (t is not None and t <= now - grace_secs)

    chosen: list[int] = []
    for i, seq in enumerate(remaining):
        after = numbered[remaining[i + 1]] if i + 1 < len(remaining) else end
        if not old(after):
            break
        chosen.append(seq)
    report.kept_recent = len(remaining) - len(chosen)
    if len(chosen) < 2 and (keep_end or end is None or len(chosen) < len(remaining)):
        chosen = []  # one object merged alone is the same number of objects
    drop_end = (not keep_end and end is not None and len(chosen) == len(remaining)
                and (chosen or merged))
    if not chosen and not stale and not drop_end:
        return report
    try:
        if chosen:
            target = merged_object_name(base, chosen[-1])
            total = 0
            # Written whole, then made visible at once (a single put, or a multipart upload
            # that appears when completed): no reader sees a partial merged object.
            with fs.open(target, "wb", block_size=_PART_BYTES) as f:
                for seq in chosen:
                    data = fs.cat_file(numbered[seq])
                    report.bytes_downloaded += len(data)
                    f.write(data)
                    total += len(data)
            fs.invalidate_cache(target.rpartition("/")[0])
            size = fs.info(target)["size"]
            if size != total:
                raise CompactionError(
                    f"{url}: the merged object holds {size} bytes, not {total}; its numbered "
                    "objects are kept")
            report.bytes_uploaded = total
            report.written.append(target)
        doomed = [numbered[s] for s in stale + chosen]
        if drop_end and end is not None:
            doomed.append(end)  # the merged objects hold everything: one object left
        if doomed:
            fs.rm(doomed)  # one request per 1,000 objects on S3
    except CompactionError:
        raise
    except Exception as e:
        raise _redacted(e, url) from None
    report.merged = len(stale) + len(chosen)
    report.objects_after = (report.objects_before - report.merged + len(report.written)
                            - bool(drop_end))
    report.status = "compacted"
    return report


def compact(
    url: str,
    *,
    storage_options: dict[str, Any] | None = None,
    grace_secs: float = DEFAULT_GRACE_SECS,
    assume_finished: bool = False,
    keep_end: bool = True,
) -> list[FileCompaction | CompactionError]:
    """Merge the objects of every finished event file under ``url``, or of one file.

    ``url`` is a logdir or run (every event file below it, in every run) or one event
    file's URL (the name its objects share, without ``.<seq>``). Returns, per file, what
    was done, or the :class:`CompactionError` that kept it as it is (not finished, objects
    missing); a single file that cannot be merged raises instead. ``keep_end`` as in
    :func:`compact_file`.

    Raises:
      ValueError: ``url`` is not a URL (a local event file is one file already).
      FileNotFoundError: nothing written by summarylib's URL writer under ``url``.
      CompactionError, OSError: as :func:`compact_file`; messages name the URL only.
    """
    if not isinstance(url, str) or not is_url(url):
        raise ValueError(f"compact: 'url' must be an object-store URL (s3://, gs://, ...), "
                         f"got {url!r}; a local event file is one file already")
    protocol = split_url(url)[0]
    try:
        fs = filesystem(url, storage_options)
        root = fs._strip_protocol(url).rstrip("/")
        fs.invalidate_cache()
        single = _is_event_file(root.rpartition("/")[2]) and not fs.isdir(root)
        if single:
            listing = fs.ls(root.rpartition("/")[0], detail=True)
        else:
            listing = list(fs.find(root, detail=True).values()) if fs.isdir(root) else []
    except (ValueError, ImportError):
        raise
    except Exception as e:
        raise _redacted(e, url) from None
    infos = {i["name"]: i for i in listing}
    bases: set[str] = set()
    for path in infos:
        name = path.rpartition("/")[2]
        if not _is_event_file(name):
            continue
        if name.endswith(END_SUFFIX):
            bases.add(path[: -len(END_SUFFIX)])
            continue
        parts = object_parts(path)
        if parts is not None:
            bases.add(parts[0])
    if single:
        bases &= {root}
    if not bases:
        raise FileNotFoundError(
            f"compact: no event file written by summarylib's URL writer under {url}")
    results: list[FileCompaction | CompactionError] = []
    for base in sorted(bases):
        # The URL as the user spelled it (memory:// paths gain a "/" when stripped).
        file_url = url.rstrip("/") + base[len(root):] if base.startswith(root) else (
            f"{protocol}://{base}")
        directory = base.rpartition("/")[0]
        own = {p: i for p, i in infos.items() if p.rpartition("/")[0] == directory}
        try:
            results.append(compact_file(fs, base, file_url, grace_secs=grace_secs,
                                        assume_finished=assume_finished, infos=own,
                                        keep_end=keep_end))
        except CompactionError as e:
            if single:
                raise
            results.append(e)
    return results


def _is_event_file(basename: str) -> bool:
    # TensorBoard's rule (the readers' too): any file whose name contains "tfevents".
    return "tfevents" in basename


def compact_at_close(out: ObjectOutput) -> None:
    """Merge ``out``'s objects once it is closed (``compact_on_close``); a failure warns."""
    import warnings

    try:
        out.compaction = compact_file(
            out.fs, out.base, out.name, grace_secs=DEFAULT_GRACE_SECS,
            modified=out.uploaded_at(), now=time.time())
    except Exception as e:
        # Every event is uploaded already: a failed merge loses nothing, and the
        # command line can finish it (it resumes where this one stopped).
        warnings.warn(
            f"summarylib: compacting {out.name} at close failed ({_redacted(e, out.name)});"
            f" its objects are all there: run `summarylib compact {out.url}` later",
            RuntimeWarning, stacklevel=2)
