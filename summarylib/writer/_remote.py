"""Event files on object storage (``s3://``, ``gs://``, ``memory://``, ... through fsspec).

Object stores cannot append, and rewriting a whole object on every flush (what TensorFlow's
and TensorBoard's S3 writers do) uploads a long run's log over and over: bytes uploaded
grow with the square of the run's length. :class:`ObjectOutput` uploads every byte once:
each upload is a **new object** holding the records written since the previous one, named
``<event file name>.<seq:012d>`` (``seq`` from 0; twelve digits, so the names sort in write
order for as many uploads as a run can make), and TensorBoard reads them, one after the
other, as one run. ``close()`` ends the file with an empty object ``<event file name>.end``
(it sorts after every numbered object): the mark of a finished file, which
:mod:`summarylib.writer._compaction` needs before it merges a file's objects.

When data becomes visible, and how many objects a run makes:
  * the first object (the file-version record) is uploaded when the writer is created;
  * ``flush()``, ``close()``, exiting ``as_default()`` and interpreter exit upload what is
    pending at once;
  * writes that the flush policy triggers (``max_queue``, ``flush_millis``) upload only if
    ``min_upload_secs`` (default 60) passed since the previous upload or ``upload_bytes``
    (default 8 MiB) are pending; otherwise the bytes wait for the next upload. So a writer
    makes at most ``3600 / min_upload_secs`` objects an hour (60 by default) plus one per
    8 MiB logged and one per explicit flush, and a live TensorBoard sees data at most
    ``max(flush_millis, min_upload_secs)`` after it was logged. Every object costs each
    reader requests for as long as the run is read (TensorBoard's loader takes about as
    long per small object as for a whole file), hence the minute.
  * A failed upload is retried ``retries`` times with exponential backoff (0.2 s, doubling,
    at most 10 s apart) on the writer's thread; then the writer reports
    ``WriteFailedError`` on the next call, flush or close (or warns, ``on_error="warn"``)
    and keeps the bytes: the next upload retries them, so nothing acknowledged is dropped
    while the process lives. A crash loses what was not yet uploaded, as a local writer
    loses what was not yet written.
  * Bytes waiting for upload count toward the writer's ``max_buffer_bytes``: during an
    outage, callers wait for room (nothing is dropped) as they would for a slow disk.
  * The bucket must exist: a logger never creates one (a typo would otherwise leave logs in
    a bucket nobody watches). A store that cannot be reached at all (a wrong endpoint, no
    network) is reported as such (``ConnectionError``), not as a missing bucket.
  * With ``compact_on_close``, ``close()`` then merges the file's objects (see
    :mod:`summarylib.writer._compaction`); a failed merge only warns: nothing is lost, and
    ``summarylib compact URL`` finishes it later.

fsspec and the protocol's package (s3fs, gcsfs, adlfs) are imported only for a URL logdir
(``pip install summarylib[remote]``). Messages name the URL only, never the
``storage_options`` (which may hold credentials).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from summarylib.writer._naming import event_file_name
from summarylib.writer._output import Output

__all__ = [
    "END_SUFFIX",
    "MERGED_SUFFIX",
    "SEQUENCE_DIGITS",
    "ObjectOutput",
    "event_output_opener",
    "is_url",
    "merged_object_name",
    "object_name",
    "object_parts",
    "open_object_output",
    "reading_filesystem",
    "reading_storage_options",
    "set_reading_storage_options",
    "split_url",
    "unreachable",
    "url_problem",
]

DEFAULT_MIN_UPLOAD_SECS = 60.0
DEFAULT_UPLOAD_BYTES = 8 << 20
DEFAULT_RETRIES = 5
#: Digits of an object's sequence number: names sort in upload order up to 10**12 uploads.
SEQUENCE_DIGITS = 12
#: Suffix of the empty object that ``close()`` uploads last: the file is finished.
END_SUFFIX = ".end"
#: The suffix of a merged object (``summarylib compact``), after the sequence number of
#: the last numbered object it holds.
MERGED_SUFFIX = ".compacted"
_PIECE = re.compile(rf"\.(\d{{{SEQUENCE_DIGITS}}})({re.escape(MERGED_SUFFIX)})?$")
# Protocols whose first path component is a bucket (or container) that must exist.
_BUCKET_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss"})


def is_url(path: str) -> bool:
    """True for ``protocol://...`` paths other than plain local ``file://`` ones."""
    return "://" in path and not path.startswith("file://")


def split_url(url: str) -> tuple[str, str]:
    """``(protocol, rest)`` of a URL."""
    protocol, _, rest = url.partition("://")
    return protocol, rest


def filesystem(url: str, storage_options: dict[str, Any] | None) -> Any:
    """The fsspec filesystem of ``url`` (raises ImportError with the install hint)."""
    try:
        import fsspec
    except ImportError as e:
        raise ImportError(
            f"a logdir URL ({split_url(url)[0]}://) needs fsspec: pip install "
            "'summarylib[remote]' (and the protocol's package, e.g. s3fs)") from e
    protocol = split_url(url)[0]
    try:
        return fsspec.filesystem(protocol, **(storage_options or {}))
    except ValueError as e:
        raise ValueError(f"unknown URL protocol {protocol!r} in {url!r}: {e}") from None


# The storage options readers use (None: fsspec's defaults, from the environment).
_reading_options: dict[str, Any] | None = None


def set_reading_storage_options(options: dict[str, Any] | None) -> None:
    """Set the fsspec options that every reader of a URL uses from now on in this process
    (the command line's ``--storage-option``/``--endpoint-url``/``--profile``); None: the
    defaults, which fsspec's protocols take from the environment (``AWS_ENDPOINT_URL``,
    ``AWS_PROFILE``, ...)."""
    global _reading_options
    _reading_options = None if options is None else dict(options)


@contextlib.contextmanager
def reading_storage_options(options: dict[str, Any] | None) -> Iterator[None]:
    """:func:`set_reading_storage_options` for the ``with`` block (a command line run),
    then the options of before."""
    before = _reading_options
    set_reading_storage_options(options)
    try:
        yield
    finally:
        set_reading_storage_options(before)


def reading_filesystem(url: str) -> Any:
    """The fsspec filesystem through which readers read ``url``, with an empty listing
    cache: fsspec keeps one instance per protocol and options for the whole process, and
    its cached listings would hide objects written, merged or deleted since (a notebook
    polling a live run, ``summarylib tail``)."""
    fs = filesystem(url, _reading_options)
    fs.invalidate_cache()
    return fs


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) says that the store did not answer: refused,
    timed out, no route, a name that does not resolve. Clients name these differently
    (botocore's ``EndpointConnectionError``, aiohttp's ``ClientConnectorError``, ...)."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (ConnectionError, TimeoutError)):
            return True
        names = {c.__name__ for c in type(e).__mro__}
        if names & {"EndpointConnectionError", "ConnectTimeoutError", "ConnectionError",
                    "ClientConnectorError", "ServerTimeoutError", "gaierror",
                    "ConnectionClosedError", "ReadTimeoutError", "ProxyConnectionError"}:
            return True
        e = e.__cause__ or e.__context__
    return False


def _bucket_exists(fs: Any, bucket: str, url: str) -> bool:
    """Whether ``bucket`` exists; ConnectionError if the store cannot be reached.

    Not ``fs.exists``: it answers False for a store that does not answer at all.
    """
    try:
        fs.info(bucket)
    except FileNotFoundError:
        return False
    except PermissionError:
        return True  # there, but these credentials may not look at it: writes will say
    except Exception as e:
        if unreachable(e):
            raise ConnectionError(
                f"could not reach the object store of {url!r} ({_redacted(e, url)}); check "
                "its endpoint (AWS_ENDPOINT_URL, or storage_options such as "
                "{'endpoint_url': ...}; --endpoint-url on the command line) and the network"
            ) from None
        raise _redacted(e, url) from None
    return True


def url_problem(url: str, storage_options: dict[str, Any] | None = None) -> str | None:
    """Why nothing can be read at ``url`` (no such bucket, nothing there, the store cannot
    be reached, fsspec or the protocol's package missing), or None if something is there.
    ``storage_options`` None: the readers' (see :func:`set_reading_storage_options`)."""
    try:
        fs = filesystem(url, _reading_options if storage_options is None else storage_options)
        fs.invalidate_cache()
        path = fs._strip_protocol(url).rstrip("/")
        bucket = path.split("/", 1)[0]
        if split_url(url)[0] in _BUCKET_PROTOCOLS and bucket and not _bucket_exists(
                fs, bucket, url):
            return f"the bucket {bucket!r} of {url} does not exist"
        if not fs.exists(path):
            return f"nothing at {url}"
    except (ConnectionError, ImportError, ValueError) as e:
        return str(e)
    except Exception as e:
        return str(_redacted(e, url))
    return None


def object_name(base: str, seq: int) -> str:
    """The name of the ``seq``-th object of the event file ``base`` (sorts by ``seq``)."""
    return f"{base}.{seq:0{SEQUENCE_DIGITS}d}"


def end_object_name(base: str) -> str:
    """The name of the empty object that marks the event file ``base`` finished.

    ``.end`` sorts after ``.<digits>``, so readers reach it after every numbered object.
    """
    return base + END_SUFFIX


def merged_object_name(base: str, last_seq: int) -> str:
    """The merged object holding numbered objects up to ``last_seq`` of the file ``base``.

    It sorts after object ``last_seq`` and before ``last_seq + 1``.
    """
    return f"{base}.{last_seq:0{SEQUENCE_DIGITS}d}{MERGED_SUFFIX}"


def object_parts(path: str) -> tuple[str, int, bool] | None:
    """``(file, seq, merged)`` of a numbered or merged object's path or URL, else None."""
    m = _PIECE.search(path)
    if m is None:
        return None
    return path[: m.start()], int(m.group(1)), bool(m.group(2))


def _redacted(error: BaseException, url: str) -> OSError:
    # Only the error's type and message, never its arguments, which for some clients
    # include request parameters; and only the URL, never the storage options.
    message = str(error).splitlines()[0][:300] if str(error) else type(error).__name__
    for marker in ("AWSAccessKeyId=", "Signature=", "X-Amz-Credential=", "X-Amz-Signature="):
        if marker in message:
            message = message.split(marker)[0] + marker + "<redacted>"
    return OSError(f"{type(error).__name__}: {message} ({url})")


class ObjectOutput(Output):
    """Event records uploaded as a sequence of new objects (see the module docstring)."""

    def __init__(self, fs: Any, directory: str, url: str, suffix: str, *,
                 min_upload_secs: float = DEFAULT_MIN_UPLOAD_SECS,
                 upload_bytes: int = DEFAULT_UPLOAD_BYTES,
                 retries: int | None = None,
                 on_closed: Callable[[ObjectOutput], None] | None = None) -> None:
        basename = event_file_name(suffix)
        self._fs = fs
        self._base = f"{directory.rstrip('/')}/{basename}"
        self._url = url
        self.name = f"{url.rstrip('/')}/{basename}"
        self._pending = bytearray()
        self._seq = 0
        self._last_upload = float("-inf")
        self._min_upload_secs = min_upload_secs
        self._upload_bytes = upload_bytes
        self._retries = DEFAULT_RETRIES if retries is None else retries
        self._on_closed = on_closed
        # Wall-clock time of each object's upload, by name: close-time compaction keeps the
        # objects that a live reader may still be positioned on (see compaction).
        self._uploaded_at: dict[str, float] = {}
        self._closed = False
        #: Bytes uploaded so far (objects' contents): never more than the bytes written.
        self.bytes_uploaded = 0
        self.objects = 0
        #: What close-time compaction did (None until it ran): see ``compact_file``.
        self.compaction: Any = None

    def write(self, data: bytes) -> None:
        self._pending += data

    def flush(self) -> None:
        """Upload if the policy says so (see the module docstring)."""
        due = time.monotonic() - self._last_upload >= self._min_upload_secs
        if self._pending and (due or len(self._pending) >= self._upload_bytes):
            self._upload()

    def push(self) -> None:
        """Upload everything pending now (explicit flush, close, exit)."""
        if self._pending:
            self._upload()

    @property
    def held_bytes(self) -> int:
        """Bytes written but not uploaded yet."""
        return len(self._pending)

    def sync(self) -> None:
        self.push()

    def close(self) -> None:
        """Upload what is pending, then the empty end object; then compact if asked to."""
        if self._closed:
            return
        self.push()
        self._put(end_object_name(self._base), b"")
        self._closed = True
        if self._on_closed is not None:
            self._on_closed(self)

    @property
    def fs(self) -> Any:
        """The fsspec filesystem the objects are on."""
        return self._fs

    @property
    def base(self) -> str:
        """The file's path on the filesystem; its objects are ``<base>.<seq>``."""
        return self._base

    @property
    def url(self) -> str:
        """The logdir URL as the writer was given it (for messages)."""
        return self._url

    def uploaded_at(self) -> dict[str, float]:
        """Each object's path -> when it was uploaded (``time.time()``)."""
        return dict(self._uploaded_at)

    def _upload(self) -> None:
        data = bytes(self._pending)
        self._put(object_name(self._base, self._seq), data)
        del self._pending[: len(data)]
        self._seq += 1
        self._last_upload = time.monotonic()

    def _put(self, path: str, data: bytes) -> None:
        delay = 0.2
        for attempt in range(self._retries + 1):
            try:
                self._fs.pipe_file(path, data)
                break
            except Exception as e:
                if attempt == self._retries:
                    raise _redacted(e, self.name) from None
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
        self._uploaded_at[path] = time.time()
        self.objects += 1
        self.bytes_uploaded += len(data)


def open_object_output(url: str, suffix: str, storage_options: dict[str, Any] | None,
                       **options: Any) -> ObjectOutput:
    """An :class:`ObjectOutput` for a new event file under the URL ``url``."""
    fs = filesystem(url, storage_options)
    directory = fs._strip_protocol(url)
    protocol = split_url(url)[0]
    if protocol in _BUCKET_PROTOCOLS:
        # No makedirs here: on an object store it creates a missing bucket.
        bucket = directory.split("/", 1)[0]
        if not bucket or not _bucket_exists(fs, bucket, url):
            raise FileNotFoundError(
                f"the bucket {bucket!r} of {url!r} does not exist; create it first "
                "(summarylib never creates buckets)")
    else:
        try:
            fs.makedirs(directory, exist_ok=True)
        except Exception as e:
            raise _redacted(e, url) from None
    return ObjectOutput(fs, directory, url, suffix, **options)


def event_output_opener(path: str, suffix: str,
                        storage_options: dict[str, Any] | None, *,
                        on_closed: Callable[[ObjectOutput], None] | None = None) -> Any:
    """A zero-argument callable opening a new event file at ``path`` (local or URL).

    ``on_closed`` (URLs only: a local event file is one file already) runs after an
    object output's close, e.g. to merge its objects.
    """
    if is_url(path):
        return lambda: open_object_output(path, suffix, storage_options,
                                          on_closed=on_closed)
    from summarylib.writer._output import open_event_file

    local = path[len("file://"):] if path.startswith("file://") else path
    return lambda: open_event_file(local, suffix)
