"""Names users pass that become file or directory names: kept inside the log directory.

Embedding tags, ``add_scalars`` keys, hparams run names and the like end up as one path
component under the log directory. :func:`safe_component` turns any non-empty name into a
component that cannot leave that directory or mean something special to an operating
system, changing ordinary names not at all:

  * ``%``, ``/``, ``\\``, ``:``, NUL and other control characters are percent-encoded
    (``%2f``: lowercase hex, as torch encodes embedding tags), so ``a/b`` is one directory
    ``a%2fb``, never a subdirectory, and ``../x`` cannot climb;
  * ``.`` and ``..`` and a trailing dot or space (which Windows drops) have that dot or
    space encoded; Windows' reserved device names (``CON``, ``NUL``, ``COM1``, ... with any
    extension, any case) have their first letter encoded;
  * an empty name, or one whose encoding exceeds 255 bytes, raises ``ValueError``.

Distinct names stay distinct (the encoding is injective: ``%`` itself is encoded).
"""

from __future__ import annotations

import re

__all__ = ["check_name_text", "safe_component"]

_ENCODED = re.compile(r"[%/\\:\x00-\x1f\x7f]")
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", re.IGNORECASE)


def _escape(match: re.Match[str]) -> str:
    return f"%{ord(match.group()):02x}"


def safe_component(name: object, where: str, arg: str) -> str:
    """``name`` as one safe path component (see the module docstring).

    Raises:
      TypeError: ``name`` is not a str.
      ValueError: ``name`` is empty or too long once encoded.
    """
    if not isinstance(name, str):
        raise TypeError(f"{where}: {arg!r} must be a str, got {type(name).__name__}")
    if not name:
        raise ValueError(f"{where}: {arg!r} must be a non-empty name")
    out = _ENCODED.sub(_escape, name)
    if out in (".", ".."):
        out = "%2e" * len(out)
    if out[-1] in ". ":
        out = out[:-1] + f"%{ord(out[-1]):02x}"
    if _RESERVED.match(out):
        out = f"%{ord(out[0]):02x}" + out[1:]
    try:
        size = len(out.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{where}: {arg!r} is not valid Unicode text: {name!r}") from None
    if size > 255:
        raise ValueError(f"{where}: {arg!r} is too long for a file name: {name[:40]!r}...")
    return out


def check_name_text(name: str, where: str, arg: str) -> str:
    """Return ``name`` if UTF-8 can encode it, else raise ``ValueError`` naming the call.

    File and object names are UTF-8 on every platform summarylib writes to; a lone
    surrogate (``"\\ud800"``) would otherwise fail later, in ``open()``, with a codec
    error that names neither the call nor the argument.
    """
    if not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"{where}: {arg!r} is not valid Unicode text: {e}") from None
    return name
