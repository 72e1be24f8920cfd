"""TensorFlow's ``tf.summary`` behaviours its own tests (``summary_ops_test.py``) check:
leaving ``as_default()`` writes the block's events, ``summary_scope(None)``, corrupt
``write_raw_pb`` bytes, and no objects left behind by writers made and dropped in a block.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

import summarylib as sl
from tests.helpers import tb_events


def _scalar_steps(path: str) -> list[tuple[str, int]]:
    return [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value]


def _files(logdir: Path) -> list[str]:
    return sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))


def test_leaving_as_default_writes_the_blocks_events(tmp_path: Path) -> None:
    # testWriterFlush / testNoSharing / testWrite_usingDefaultStep_fromAsDefault: the file
    # is read right after the block, with no flush() or close().
    w = sl.create_file_writer(tmp_path)
    with w.as_default(step=3):
        assert sl.scalar("a", 1.0)
        assert sl.write("t", 7)
    assert _scalar_steps(_files(tmp_path)[0]) == [("a", 3), ("t", 3)]
    for step in range(4, 7):  # a block per step: each ends with its event in the file
        with w.as_default(step=step):
            sl.scalar("a", float(step))
        assert _scalar_steps(_files(tmp_path)[0])[-1] == ("a", step)
    # A second writer of the same directory: its own file, written at its block's end.
    with sl.create_file_writer(tmp_path).as_default():
        sl.scalar("b", 2.0, step=9)
    files = _files(tmp_path)
    assert len(files) == 2 and _scalar_steps(files[1]) == [("b", 9)]
    # More events than a block writes itself: they are in the file at the end all the same.
    with w.as_default(step=0):
        for i in range(300):
            sl.scalar("many", float(i), step=i)
    assert sum(t == "many" for t, _ in _scalar_steps(files[0])) == 300
    w.close()


def test_summary_scope_without_names_is_tensorflows_summary() -> None:
    with sl.summary_scope(None) as got:
        assert got == ("summary", "summary/")
    with sl.name_scope("outer"), sl.summary_scope(None, None) as got:
        assert got == ("outer/summary", "outer/summary/")


def test_write_raw_pb_of_bytes_that_are_no_summary_is_a_data_loss_error(tmp_path: Path) -> None:
    with sl.create_file_writer(tmp_path).as_default(step=1) as w:
        with pytest.raises(sl.DataLossError, match="write_raw_pb: 'tensor' is not a serialized"):
            sl.write_raw_pb(b"\xff\xff")
        with pytest.raises(ValueError):  # and a ValueError, for code written for that
            sl.write_raw_pb(b"\x0a\x05")
    w.close()
    assert _scalar_steps(_files(tmp_path)[0]) == []


_LEAK_PROBE = """
import gc, sys
from collections import Counter
import summarylib as sl

logdir = sys.argv[1]
outer = sl.create_file_writer(logdir + "/outer")

def once():
    with sl.create_file_writer(logdir).as_default():
        sl.write("tag", 1, step=0)
    with outer.as_default(step=0):
        inner = sl.create_file_writer(logdir)
        with inner.as_default():
            sl.scalar("x", 1.0)
        del inner

for _ in range(3):  # warm: imports, caches
    once()
gc.collect()
old = gc.get_objects()
old_ids = set(map(id, old))
for _ in range(5):
    once()
gc.collect()
now = gc.get_objects()
left = Counter(type(o).__name__ for o in now
               if id(o) not in old_ids and o is not old and o is not old_ids)
del old, now
outer.close()
print(dict(left))
"""


def test_writers_made_and_dropped_in_a_block_leave_nothing_behind(tmp_path: Path) -> None:
    # testNoMemoryLeak_eagerMode, and a writer made and dropped inside another's block:
    # no object the calls made outlives them (the objects before are kept alive, so no
    # new object can reuse an old one's id). In a fresh interpreter: in the test process,
    # objects made meanwhile by other tests' background threads would be counted too.
    done = subprocess.run([sys.executable, "-c", _LEAK_PROBE, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{}", done.stdout
