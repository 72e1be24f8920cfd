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

Merging the numbered objects ``i..k`` uploads their bytes, in order, under a temporary
name that no reader reads (``.<file with tfevents -> tfmerge>.<k>.merging-<token>``, beside
the file), reads that object back and compares its SHA-256 and size with the bytes it
downloaded, then copies it to ``<file>.<k>.compacted`` in one server-side request (the
object appears whole or not at all) and deletes ``i..k`` in one request. fsspec's file
objects upload what they hold even when an exception leaves their block: that is why the
upload never goes to the visible name. A merged object is never merged again, so each
byte is uploaded at most twice in all: once in its numbered object, once in the merged one
(the copy is made by the store). Downloading and re-uploading is what works on every
fsspec store (S3's server-side part copy needs parts of 5 MiB, and flushes are small).

One merge at a time per file. A merge first creates a lease object
(``.<...>.lease``) *exclusively*: on S3 one conditional ``PUT`` (``If-None-Match: *``,
which fsspec's ``pipe_file(mode="create")`` sends); elsewhere a check then a write. A
second merge (a cron job beside ``compact_on_close``) finds it and does nothing
(:class:`CompactionBusy`); a lease older than ``lease_secs`` (its merge was killed) is
broken. The holder checks that the lease is still its own, and that no merged object
appeared and none of its objects went, before it makes its merged object visible, and its
lease again before it deletes. Nothing relies on the lease alone for safety:

* a numbered object is deleted only once a visible merged object is known to hold it byte
  for byte (the one just verified, or, for objects an interrupted merge left behind, the
  merged object searched for their bytes in order);
* a merged object is deleted only when a later merged object begins with all of its bytes
  (two merges that started from the same listing), or when it is only the start of the
  numbered objects it names, all still there (a failed merge of an earlier version).

So a re-run after a failure at any point (download, upload, copy, check, a delete that
stopped halfway, a kill) converges: nothing lost, and once it has run, nothing that a
reader reads twice. A merge killed outright leaves its lease: the next one waits up to
``lease_secs`` (default 15 minutes) and says so.

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
  restart such a TensorBoard. Likewise a merge that fails after its merged object became
  visible and before its delete finished leaves, until the next run, objects that a reader
  *starting* then reads twice (a follower reads nothing twice: the merged object sorts
  before where it sits). A merge that fails earlier leaves nothing a reader reads.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import time
import uuid
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
    "DEFAULT_LEASE_SECS",
    "MERGED_SUFFIX",
    "CompactionBusy",
    "CompactionError",
    "FileCompaction",
    "compact",
    "compact_at_close",
    "compact_file",
    "merged_object_name",
    "object_parts",
    "side_object_name",
]

#: How long the object after a numbered one must have existed before that one is merged.
DEFAULT_GRACE_SECS = 60.0
#: Suffix of a merged object, after the sequence number of the last object it holds.
# Bytes the merge holds before it uploads a part (S3's parts are at least 5 MiB): with one
# numbered object read at a time, what a merge holds in memory, however long the file.
_PART_BYTES = 8 << 20
#: How long a merge's lease lasts (see :class:`_Lease`): the longest a merge killed on the
#: way keeps another from merging the same file.
DEFAULT_LEASE_SECS = 900.0
# Bytes of each merged object compared to find two that begin alike (see _held_by_later).
_HEAD_BYTES = 64


class CompactionError(Exception):
    """A file cannot be merged (not finished, objects missing); the message names its URL."""


class CompactionBusy(CompactionError):
    """Another merge of the same file holds its lease (or changed it meanwhile): this one
    did nothing, or stopped before deleting anything. Run it again later."""


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
    #: Merged objects deleted because a later merged object holds them whole, or because
    #: they held only the start of the numbered objects they name (all still there).
    merged_objects_removed: int = 0
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


def side_object_name(base: str, what: str) -> str:
    """The name of a merge's own object (lease, temporary) beside the event file ``base``.

    It never contains ``tfevents`` (readers, TensorBoard's too, read only names that do) and
    starts with a dot: no reader lists it as an event file, whatever it holds.
    """
    directory, _, name = base.rpartition("/")
    return f"{directory}/.{name.replace('tfevents', 'tfmerge')}.{what}"


def _create_exclusive(fs: Any, path: str, data: bytes) -> None:
    """Create ``path`` only if no object has that name (``FileExistsError`` otherwise).

    S3 (and moto's server) does this in one conditional request (``If-None-Match: *``),
    through ``pipe_file(mode="create")``; a store whose fsspec class has no such mode gets a
    check then a write, which two merges started in the same instant can both pass (the
    checks before every delete keep that case from losing or duplicating events).
    """
    try:
        fs.pipe_file(path, data, mode="create")
    except TypeError:  # an fsspec class without the mode
        if fs.exists(path):
            raise FileExistsError(path) from None
        fs.pipe_file(path, data)


class _Lease:
    """One merge at a time per event file: a small object created exclusively.

    It holds a random token and an expiry time. A merge that finds a lease not yet expired
    leaves the file alone (:class:`CompactionBusy`); an expired one (its merge was killed)
    is broken. The holder checks that the lease is still its own before it makes its merged
    object visible and before it deletes anything. The expiry is the holder's clock: hosts
    that merge the same files must agree on the time to within minutes.
    """

    def __init__(self, fs: Any, base: str, url: str, secs: float) -> None:
        self.fs = fs
        self.path = side_object_name(base, "lease")
        self.url = url
        self.secs = secs
        self.token = uuid.uuid4().hex

    def acquire(self) -> None:
        body = json.dumps({"token": self.token, "expires": time.time() + self.secs}).encode()
        for _ in range(3):
            try:
                _create_exclusive(self.fs, self.path, body)
                return
            except FileExistsError:
                holder = self._holder()
                if holder is None:
                    continue  # released meanwhile
                expires = holder.get("expires")
                if isinstance(expires, (int, float)) and expires > time.time():
                    when = datetime.datetime.fromtimestamp(expires, datetime.timezone.utc)
                    raise CompactionBusy(
                        f"{self.url} is being merged by another compaction (its lease "
                        f"expires at {when:%Y-%m-%d %H:%M:%S} UTC); nothing done") from None
                with contextlib.suppress(FileNotFoundError):
                    self.fs.rm_file(self.path)  # expired: that merge was stopped
        raise CompactionBusy(f"{self.url}: another compaction keeps taking its lease; "
                             "nothing done")

    def _holder(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.fs.cat_file(self.path))
        except FileNotFoundError:
            return None
        except ValueError:
            return {}  # unreadable: treated as expired
        return data if isinstance(data, dict) else {}

    def check(self) -> None:
        """Raise :class:`CompactionBusy` unless the lease is still this merge's."""
        holder = self._holder()
        if holder is None or holder.get("token") != self.token:
            raise CompactionBusy(
                f"{self.url}: this compaction's lease was broken (it ran past "
                f"{self.secs:g} s) and another one took over; nothing deleted")

    def release(self) -> None:
        holder = self._holder()
        if holder is not None and holder.get("token") == self.token:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm_file(self.path)


def _listing(fs: Any, base: str) -> dict[str, dict[str, Any]]:
    """The directory of ``base`` as the store holds it now (never a cached listing)."""
    directory = base.rpartition("/")[0]
    fs.invalidate_cache(directory)
    return {i["name"]: i for i in fs.ls(directory, detail=True)}


def _sha256_of(fs: Any, path: str) -> tuple[int, bytes]:
    """``(size, sha256)`` of the object ``path``, read back from the store in parts."""
    digest = hashlib.sha256()
    size = 0
    with fs.open(path, "rb", block_size=_PART_BYTES) as f:
        while chunk := f.read(_PART_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.digest()


def _held_objects(fs: Any, merged_path: str, first: int, last: int,
                  numbered: dict[int, str], url: str) -> list[int] | None:
    """Numbered objects ``first..last`` still there that the merged object holds, byte for
    byte and in order; None if the merged object is only a part of them (all there); or
    raise :class:`CompactionError` (then nothing is deleted).

    A merge interrupted between its delete requests leaves some of the objects its merged
    object holds: each one left must appear in the merged object, after the one before it.
    The merged object is read whole here (only on this recovery path).
    """
    present = [s for s in range(first, last + 1) if s in numbered]
    if not present:
        return []
    merged = fs.cat_file(merged_path)
    parts = [fs.cat_file(numbered[s]) for s in present]
    name = merged_path.rpartition("/")[2]
    if len(present) == last - first + 1:
        whole = b"".join(parts)
        if merged == whole:
            return present
        if whole.startswith(merged):
            return None  # its bytes are all in the numbered objects: it can go
        raise CompactionError(
            f"{url}: the merged object {name} does not hold exactly the objects it "
            f"replaces ({len(merged)} bytes, they hold {len(whole)}); nothing deleted")
    at = 0
    for seq, data in zip(present, parts, strict=True):
        found = merged.find(data, at)
        if found < 0:
            raise CompactionError(
                f"{url}: object {url}.{seq:0{SEQUENCE_DIGITS}d} is not in the merged object "
                f"{name}; nothing deleted")
        at = found + len(data)
    return present


def _held_by_later(fs: Any, merged: dict[int, str],
                   infos: dict[str, dict[str, Any]]) -> list[int]:
    """Merged objects whose bytes begin a later merged object (made by two merges that
    started from the same listing): the later one holds them whole."""
    if len(merged) < 2:
        return []
    seqs = sorted(merged)
    heads: dict[int, bytes] = {}

    def head(seq: int) -> bytes:
        if seq not in heads:
            heads[seq] = fs.cat_file(merged[seq], start=0, end=_HEAD_BYTES)
        return heads[seq]

    held = []
    for i, a in enumerate(seqs):
        size_a = int(infos[merged[a]].get("size") or 0)
        for b in seqs[i + 1:]:
            if int(infos[merged[b]].get("size") or 0) < size_a or head(a) != head(b):
                continue
            if fs.cat_file(merged[b], start=0, end=size_a) == fs.cat_file(merged[a]):
                held.append(a)
                break
    return held


def compact_file(
    fs: Any,
    base: str,
    url: str,
    *,
    grace_secs: float = DEFAULT_GRACE_SECS,
    assume_finished: bool = False,
    modified: dict[str, float] | None = None,
    now: float | None = None,
    keep_end: bool = True,
    lease_secs: float = DEFAULT_LEASE_SECS,
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
      keep_end: False also deletes the end object once every numbered object is merged,
        leaving only merged objects (one, unless the file was merged in stages). Only when
        no TensorBoard that loaded the file before is still running: its loader sits on
        that object and stops reloading once it vanishes.
      lease_secs: how long this merge's lease lasts: a merge killed on the way blocks the
        next one on the same file for at most this long.

    Raises:
      CompactionBusy: another merge holds the file's lease (or took it over).
      CompactionError: the file is not finished, objects are missing, or a merged object
        does not hold what it replaces; nothing is deleted.
      OSError: the store failed (the message names ``url``); nothing is lost, and a new
        run resumes.
    """
    lease = _Lease(fs, base, url, lease_secs)
    try:
        lease.acquire()
    except CompactionError:
        raise
    except Exception as e:
        raise _redacted(e, url) from None
    try:
        return _merge(fs, base, url, lease, grace_secs=grace_secs,
                      assume_finished=assume_finished, modified=modified, now=now,
                      keep_end=keep_end)
    except CompactionError:
        raise
    except Exception as e:
        raise _redacted(e, url) from None
    finally:
        with contextlib.suppress(Exception):
            lease.release()


def _merge(fs: Any, base: str, url: str, lease: _Lease, *, grace_secs: float,
           assume_finished: bool, modified: dict[str, float] | None, now: float | None,
           keep_end: bool) -> FileCompaction:
    """:func:`compact_file` once the lease is held."""
    infos = _listing(fs, base)
    numbered, merged, end = _objects_of(infos, base)
    temp_prefix = side_object_name(base, "")
    for leftover in [p for p in infos if p.startswith(temp_prefix) and ".merging-" in p]:
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(leftover)  # a temporary object of a merge that failed
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
    # Merged objects that a later one holds whole (two merges that ran at once, each
    # from the same object): the earlier goes, so that no reader reads its events twice.
    overlapped = _held_by_later(fs, merged, infos)
    if overlapped:
        lease.check()
        fs.rm([merged.pop(s) for s in overlapped])
        report.merged_objects_removed = len(overlapped)
    last_merged = max(merged, default=-1)
    # Numbered objects that a merged object already holds (a merge interrupted before or
    # during its deletes): deleted only once found in it, byte for byte.
    stale: list[int] = []
    first = 0
    for seq in sorted(merged):
        held = _held_objects(fs, merged[seq], first, seq, numbered, url)
        if held is None:  # a partial merged object (an older version's failed merge)
            lease.check()
            fs.rm_file(merged.pop(seq))
            report.merged_objects_removed += 1
            continue
        stale += held
        first = seq + 1
    last_merged = max(merged, default=-1)
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
                and bool(chosen or merged))
    if not chosen and not stale and not drop_end:
        if report.merged_objects_removed:
            report.status = "compacted"
            report.objects_after -= report.merged_objects_removed
        return report

    def unchanged() -> None:
        # Before the merged object is made visible: the lease is ours, and the objects are
        # as listed (no merged object appeared, none of ours went). Raises otherwise.
        lease.check()
        numbered_now, merged_now, _ = _objects_of(_listing(fs, base), base)
        if set(merged_now) != set(merged) or any(s not in numbered_now for s in chosen):
            raise CompactionBusy(f"{url} was changed by another compaction meanwhile; "
                                 "nothing deleted")

    if chosen:
        target = merged_object_name(base, chosen[-1])
        temp = side_object_name(base, f"{chosen[-1]:0{SEQUENCE_DIGITS}d}.merging-{lease.token}")
        digest = hashlib.sha256()
        total = 0
        try:
            # Uploaded under a name no reader reads: fsspec's file uploads what it holds
            # even when an exception leaves the block, so a failed download leaves a
            # partial *temporary* object (removed below or by the next merge).
            with fs.open(temp, "wb", block_size=_PART_BYTES) as f:
                for seq in chosen:
                    data = fs.cat_file(numbered[seq])
                    report.bytes_downloaded += len(data)
                    digest.update(data)
                    f.write(data)
                    total += len(data)
            size, uploaded = _sha256_of(fs, temp)
            if (size, uploaded) != (total, digest.digest()):
                raise CompactionError(
                    f"{url}: the merged object read back differs from the objects it "
                    f"merges ({size} bytes, they hold {total}); nothing changed")
            unchanged()
            fs.copy(temp, target)  # one server-side request: the object appears whole
        finally:
            with contextlib.suppress(Exception):
                fs.rm_file(temp)
        fs.invalidate_cache(target.rpartition("/")[0])
        if fs.info(target)["size"] != total:
            raise CompactionError(
                f"{url}: the merged object holds {fs.info(target)['size']} bytes, not "
                f"{total}; its numbered objects are kept")
        report.bytes_uploaded = total
        report.written.append(target)
    lease.check()
    doomed = [numbered[s] for s in stale + chosen]
    if drop_end and end is not None:
        doomed.append(end)  # the merged objects hold everything: one object left
    if doomed:
        fs.rm(doomed)  # one request per 1,000 objects on S3
    report.merged = len(stale) + len(chosen)
    report.objects_after = (report.objects_before - report.merged + len(report.written)
                            - bool(drop_end) - report.merged_objects_removed)
    report.status = "compacted"
    return report


def compact(
    url: str,
    *,
    storage_options: dict[str, Any] | None = None,
    grace_secs: float = DEFAULT_GRACE_SECS,
    assume_finished: bool = False,
    keep_end: bool = True,
    lease_secs: float = DEFAULT_LEASE_SECS,
) -> list[FileCompaction | CompactionError]:
    """Merge the objects of every finished event file under ``url``, or of one file.

    ``url`` is a logdir or run (every event file below it, in every run) or one event
    file's URL (the name its objects share, without ``.<seq>``). Returns, per file, what
    was done, or the :class:`CompactionError` that kept it as it is (not finished, objects
    missing, merged by another compaction at that moment); a single file that cannot be
    merged raises instead. ``keep_end`` and ``lease_secs`` as in :func:`compact_file`.

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
        try:
            results.append(compact_file(fs, base, file_url, grace_secs=grace_secs,
                                        assume_finished=assume_finished,
                                        keep_end=keep_end, lease_secs=lease_secs))
        except CompactionError as e:
            if single:
                raise
            results.append(e)
    return results


def _is_event_file(basename: str) -> bool:
    # TensorBoard's rule (the readers' too): any file whose name contains "tfevents".
    return "tfevents" in basename


def compact_at_close(out: ObjectOutput) -> None:
    """Merge ``out``'s objects once it is closed (``compact_on_close``).

    A failed merge warns (every event is uploaded already: nothing is lost). So does a merge
    that left objects as they are: the objects of the last ``DEFAULT_GRACE_SECS`` (a live
    reader may sit on them; a run shorter than that leaves all of them), and a file another
    merge held at that moment. Each warning names the file, why, and the command that
    finishes the job.
    """
    import warnings

    try:
        report = out.compaction = compact_file(
            out.fs, out.base, out.name, grace_secs=DEFAULT_GRACE_SECS,
            modified=out.uploaded_at(), now=time.time())
    except Exception as e:
        # The command line can finish it (it resumes where this one stopped).
        warnings.warn(
            f"summarylib: compacting {out.name} at close failed ({_redacted(e, out.name)});"
            f" its objects are all there: run `summarylib compact {out.url}` later",
            RuntimeWarning, stacklevel=2)
        return
    if report.kept_recent:
        merged = (f"merged {report.merged} objects and left " if report.merged
                  else "merged nothing: left ")
        warnings.warn(
            f"summarylib: compact_on_close {merged}{report.kept_recent} objects of "
            f"{out.name} as they are: they were uploaded less than {DEFAULT_GRACE_SECS:g} s "
            "before close, and a live reader (TensorBoard) may still be on them; run "
            f"`summarylib compact {out.url}` once it has moved on (or with --grace 0 if "
            "nothing is reading)", RuntimeWarning, stacklevel=2)
