"""The default-writer context, with tf.summary's semantics (format.md §6.4)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import summarylib as sl
from tests.helpers import only_file, tb_events


def tags_and_steps(path: Path) -> list[tuple[str, int]]:
    return [
        (v.tag, ev.step)
        for ev in tb_events(path)
        if ev.HasField("summary")
        for v in ev.summary.value
    ]


def test_no_default_writer_is_a_noop_returning_false() -> None:
    assert sl.scalar("x", 1.0, step=0) is False
    assert sl.scalar("x", 1.0) is False  # not even a missing step is an error
    assert sl.write("x", 1.0) is False
    assert sl.write_raw_pb(b"") is False
    assert sl.scalars({"a": 1.0}) is False
    assert not sl.should_record_summaries()


def test_writer_but_no_step_raises(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default():
        with pytest.raises(ValueError, match="no step"):
            sl.scalar("x", 1.0)
        with pytest.raises(ValueError, match="no step"):
            sl.write("x", 1.0)


def test_no_step_is_no_error_when_not_recording(logdir: Path) -> None:
    # The step is only needed once the recording condition holds (tf.summary).
    with sl.create_file_writer(logdir).as_default() as w, sl.record_if(False):
        assert sl.scalar("x", 1.0) is False
        assert sl.scalars({"x": 1.0}) is False
        assert sl.write("x", 1.0) is False
        with sl.record_if(lambda: False):
            assert sl.scalar("x", 1.0) is False
    w.close()
    assert tags_and_steps(only_file(logdir)) == []


def test_as_default_restores_previous_writer_and_step(tmp_path: Path) -> None:
    a = sl.create_file_writer(tmp_path / "a")
    b = sl.create_file_writer(tmp_path / "b")
    with a.as_default(step=1):
        sl.scalar("x", 1.0)
        with b.as_default(step=10):
            assert sl.get_step() == 10
            sl.scalar("x", 1.0)
        assert sl.get_step() == 1
        sl.scalar("x", 2.0)
        with b.as_default():  # no step given: the step is left alone
            assert sl.get_step() == 1
            sl.scalar("y", 2.0)
    assert sl.get_step() is None
    assert not sl.should_record_summaries()
    a.close()
    b.close()
    assert tags_and_steps(only_file(tmp_path / "a")) == [("x", 1), ("x", 1)]
    assert tags_and_steps(only_file(tmp_path / "b")) == [("x", 10), ("y", 1)]


def test_as_default_restores_step_changed_inside(logdir: Path) -> None:
    sl.set_step(5)
    with sl.create_file_writer(logdir).as_default(step=7):
        sl.set_step(8)
    assert sl.get_step() == 5


def test_set_as_default_has_no_exit(logdir: Path) -> None:
    w = sl.create_file_writer(logdir)
    w.set_as_default(step=3)
    assert sl.get_step() == 3
    assert sl.scalar("x", 1.0)
    w.close()
    assert tags_and_steps(only_file(logdir)) == [("x", 3)]


def test_default_writer_and_step_are_thread_local(logdir: Path) -> None:
    w = sl.create_file_writer(logdir)
    seen: dict[str, object] = {}

    def other() -> None:
        seen["record"] = sl.should_record_summaries()
        seen["step"] = sl.get_step()
        seen["wrote"] = sl.scalar("other", 1.0, step=0)

    with w.as_default(step=4):
        t = threading.Thread(target=other)
        t.start()
        t.join(10)
    w.close()
    assert seen == {"record": False, "step": None, "wrote": False}
    assert tags_and_steps(only_file(logdir)) == []


def test_set_step_get_step_and_validation() -> None:
    import numpy as np

    sl.set_step(np.int64(12))
    assert sl.get_step() == 12
    sl.set_step(None)
    assert sl.get_step() is None
    for bad in (1.5, "3", True, [1]):
        with pytest.raises(TypeError, match="'step'"):
            sl.set_step(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="int64"):
        sl.set_step(2**63)


def test_step_object_is_read_at_each_op(logdir: Path) -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        def __index__(self) -> int:
            return self.n

    c = Counter()
    with sl.create_file_writer(logdir).as_default(step=c) as w:
        for i in range(3):
            c.n = i * 10
            sl.scalar("x", 1.0)
    w.close()
    assert [s for _, s in tags_and_steps(only_file(logdir))] == [0, 10, 20]


def test_record_if_bool_callable_and_nesting(logdir: Path) -> None:
    w = sl.create_file_writer(logdir)
    step = [0]
    with w.as_default(step=0):
        with sl.record_if(False):
            assert not sl.should_record_summaries()
            assert sl.scalar("off", 1.0) is False
            with sl.record_if(True):  # nested replaces, it does not AND
                assert sl.scalar("inner", 1.0)
            assert sl.scalar("off", 1.0) is False
        with sl.record_if(lambda: step[0] % 2 == 0):
            for i in range(4):
                step[0] = i
                sl.scalar("even", float(i), step=i)
        assert sl.scalar("after", 1.0)
    w.close()
    assert tags_and_steps(only_file(logdir)) == [
        ("inner", 0),
        ("even", 0),
        ("even", 2),
        ("after", 0),
    ]


def test_lazy_values_are_evaluated_only_when_recording(logdir: Path) -> None:
    calls = []

    def value() -> float:
        calls.append(1)
        return 2.0

    assert sl.scalar("x", value, step=0) is False  # no writer
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        with sl.record_if(False):
            sl.scalar("x", value)
            sl.write("x", value)
        assert calls == []
        assert sl.scalar("x", value)
        assert sl.write("y", lambda: [1.0, 2.0])
    w.close()
    assert calls == [1]


def test_name_scope_prefixes_tags(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        with sl.name_scope("train"):
            sl.scalar("loss", 1.0)
            with sl.name_scope("inner") as scope:
                assert scope == "train/inner/"
                sl.scalar("x", 1.0)
            with sl.name_scope("abs/"):
                sl.scalar("y", 1.0)
            sl.write("raw", 1.0)  # like tf.summary.write, write() takes the tag as is
        sl.scalar("loss", 1.0)
    w.close()
    assert [t for t, _ in tags_and_steps(only_file(logdir))] == [
        "train/loss",
        "train/inner/x",
        "abs/y",
        "raw",
        "loss",
    ]
    with pytest.raises(TypeError, match="'name'"), sl.name_scope(3):  # type: ignore[arg-type]
        pass


def test_noop_writer_is_transparent_inside_a_real_writer(logdir: Path) -> None:
    # As TensorFlow's no-op writer: as_default() and set_as_default() change nothing, so
    # ops inside still write to the outer writer (and its step) and return True.
    real = sl.create_file_writer(logdir)
    noop = sl.create_noop_writer()
    with real.as_default(step=0):
        with noop.as_default(step=5) as entered:
            assert entered is noop
            assert sl.should_record_summaries()
            assert sl.get_step() == 0
            assert sl.scalar("x", 1.0) is True
            noop.flush()
            noop.init()
        noop.set_as_default(step=7)
        assert sl.get_step() == 0
        assert sl.scalar("y", 1.0) is True
        noop.close()
        assert sl.scalar("z", 1.0) is True
    real.close()
    assert tags_and_steps(only_file(logdir)) == [("x", 0), ("y", 0), ("z", 0)]


def test_noop_writer_alone_records_nothing() -> None:
    noop = sl.create_noop_writer()
    with noop.as_default(step=3):
        assert not sl.should_record_summaries()
        assert sl.scalar("x", 1.0) is False
        assert sl.get_step() is None
    noop.set_as_default(step=1)
    assert sl.scalar("x", 1.0) is False
    assert sl.get_step() is None
    noop.flush()
    noop.init()
    noop.close()
    noop.close()
    noop.init()  # never closed: it holds nothing
    assert not noop.closed
    with noop:  # enters and closes: still nothing
        assert sl.scalar("x", 1.0, step=0) is False


def test_module_flush_uses_default_writer(logdir: Path) -> None:
    from summarylib.reader import iter_records

    sl.flush()  # no default writer: nothing to do
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    sl.flush()
    assert len(list(iter_records(only_file(logdir)))) == 2
    w.close()
    # An explicit writer is flushed, not the default one.
    other = sl.create_file_writer(logdir / "b", max_queue=10**6, flush_millis=10**9)
    default = sl.create_file_writer(logdir / "c", max_queue=10**6, flush_millis=10**9)
    other.set_as_default(step=0)
    sl.scalar("x", 1.0)
    default.set_as_default(step=0)
    sl.scalar("y", 1.0)
    sl.flush(writer=other)
    assert len(list(iter_records(only_file(logdir / "b")))) == 2
    assert len(list(iter_records(only_file(logdir / "c")))) == 1  # its header only
    other.close()
    default.close()


def test_write_generic_tensor_with_metadata(logdir: Path) -> None:
    import numpy as np
    from tensorboard.compat.proto import summary_pb2 as tb_summary
    from tensorboard.util import tensor_util

    md = tb_summary.SummaryMetadata()
    md.plugin_data.plugin_name = "custom"
    md.data_class = tb_summary.DATA_CLASS_TENSOR
    with sl.create_file_writer(logdir).as_default(step=2) as w:
        assert sl.write("t", np.arange(6, dtype=np.int16).reshape(2, 3), metadata=md)
        assert sl.write("t", np.zeros((2, 3), np.int16), metadata=md.SerializeToString())
        assert sl.write("s", ["a", "bé"])
        assert sl.write("f", 0.5)
    w.close()
    values = [v for ev in tb_events(only_file(logdir)) for v in ev.summary.value]
    first, second, strings, half = values
    assert tensor_util.make_ndarray(first.tensor).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert first.metadata == md
    assert not second.HasField("metadata")  # metadata only on the first value
    assert tensor_util.make_ndarray(strings.tensor).tolist() == [b"a", "bé".encode()]
    assert half.tensor.dtype == 1  # Python floats become float32, as in TF


def test_write_raw_pb_merges_summaries(logdir: Path) -> None:
    from tensorboard.compat.proto import summary_pb2 as tb_summary

    a = tb_summary.Summary()
    a.value.add(tag="a", simple_value=1.0)
    b = tb_summary.Summary()
    b.value.add(tag="b", simple_value=2.0).metadata.display_name = "B"
    with sl.create_file_writer(logdir).as_default(step=9) as w:
        assert sl.write_raw_pb([a, b.SerializeToString()])
        with pytest.raises(ValueError, match="not a serialized Summary"):
            sl.write_raw_pb(b"\xff\xff")
        with pytest.raises(TypeError, match="'tensor'"):
            sl.write_raw_pb(3)
    w.close()
    (ev,) = [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]
    assert ev.step == 9
    assert [v.tag for v in ev.summary.value] == ["a", "b"]
    assert ev.summary.value[1].metadata.display_name == "B"


@pytest.mark.parametrize("kind", ["torch", "numpy", "jax", "object"])
def test_record_if_rereads_a_condition_changed_in_place(logdir: Path, kind: str) -> None:
    # tf.summary.record_if(variable) reads the variable at each op, not once on entry.
    import numpy as np

    class Flag:
        def __init__(self) -> None:
            self.on = False

        def __bool__(self) -> bool:
            return self.on

    if kind == "torch":
        torch = pytest.importorskip("torch")
        cond: object = torch.tensor(False)

        def set_cond(on: bool) -> None:
            cond.fill_(on)  # type: ignore[attr-defined]
    elif kind == "numpy":
        cond = np.array(False)

        def set_cond(on: bool) -> None:
            cond[...] = on  # type: ignore[index]
    elif kind == "jax":
        pytest.importorskip("jax")
        import jax.numpy as jnp

        # JAX arrays are immutable: the condition is a holder whose __bool__ reads one.
        box = [jnp.asarray(False)]

        class JaxFlag:
            def __bool__(self) -> bool:
                return bool(box[0])

        cond = JaxFlag()

        def set_cond(on: bool) -> None:
            box[0] = jnp.asarray(on)
    else:
        cond = Flag()

        def set_cond(on: bool) -> None:
            cond.on = on  # type: ignore[attr-defined]

    with sl.create_file_writer(logdir).as_default() as w, sl.record_if(cond):
        for i in range(4):
            set_cond(i % 2 == 1)
            assert sl.should_record_summaries() is (i % 2 == 1)
            assert sl.scalar("x", float(i), step=i) is (i % 2 == 1)
            assert sl.text("t", "hi", step=i) is (i % 2 == 1)
    w.close()
    assert [s for t, s in tags_and_steps(only_file(logdir)) if t == "x"] == [1, 3]


def test_record_if_rejects_a_condition_with_no_truth_value() -> None:
    import numpy as np

    with pytest.raises(ValueError, match="record_if: 'condition'"), sl.record_if(np.ones(3)):
        pass


def test_empty_name_scope_goes_to_the_root(logdir: Path) -> None:
    # As tf.name_scope(""): the block runs at the root scope; the outer one comes back after.
    with sl.create_file_writer(logdir).as_default(step=0) as w, sl.name_scope("outer"):
        with sl.name_scope("") as scope:
            assert scope == ""
            sl.scalar("top", 1.0)
            with sl.name_scope("inner") as inner:
                assert inner == "inner/"
                sl.scalar("x", 1.0)
        sl.scalar("y", 1.0)
    w.close()
    assert [t for t, _ in tags_and_steps(only_file(logdir))] == ["top", "inner/x", "outer/y"]


def test_summary_scope_yields_tag_and_scope(logdir: Path) -> None:
    # tf.summary.experimental.summary_scope: the tag keeps the name as given (characters
    # a scope cannot hold, no uniquifying); the scope drops those characters.
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        with sl.summary_scope("loss (train)") as (tag, scope):
            assert (tag, scope) == ("loss (train)", "losstrain/")
            assert sl.write(tag, 1.0)
            assert sl.scalar("x", 1.0)
        with sl.name_scope("outer"):
            for _ in range(2):  # the same name twice: the same tag and scope
                with sl.summary_scope("my op", "Default", values=[1.0]) as (tag, scope):
                    assert (tag, scope) == ("outer/my op", "outer/myop/")
            with sl.summary_scope(None, "MyOp") as (tag, scope):
                assert (tag, scope) == ("outer/MyOp", "outer/MyOp/")
            with sl.summary_scope("(?)", "Def") as (tag, scope):
                assert (tag, scope) == ("outer/(?)", "outer/Def/")
            with sl.summary_scope("é") as (tag, scope):  # nothing legal, no default: the root
                assert (tag, scope) == ("outer/é", "")
            with sl.summary_scope("a.b-c_d/e") as (tag, scope):
                assert (tag, scope) == ("outer/a.b-c_d/e", "outer/a.b-c_d/e/")
    w.close()
    assert [t for t, _ in tags_and_steps(only_file(logdir))] == ["loss (train)", "losstrain/x"]
    with pytest.raises(TypeError, match="summary_scope: 'name'"), sl.summary_scope(3):  # type: ignore[arg-type]
        pass


def test_writer_init_is_a_no_op_until_closed(logdir: Path) -> None:
    w = sl.create_file_writer(logdir)
    assert w.init() is None
    with w.as_default(step=0):
        sl.scalar("x", 1.0)
    w.init()  # changes nothing: the same file goes on
    w.close()
    with pytest.raises(sl.WriterClosedError, match="init"):
        w.init()
    assert tags_and_steps(only_file(logdir)) == [("x", 0)]


def test_write_takes_metadata_in_a_0d_bytes_array(logdir: Path) -> None:
    # tf.summary.write accepts the metadata as a scalar string tensor of serialized bytes.
    import numpy as np
    from tensorboard.compat.proto import summary_pb2 as tb_summary

    md = tb_summary.SummaryMetadata(display_name="T")
    md.plugin_data.plugin_name = "custom"
    md.data_class = tb_summary.DATA_CLASS_TENSOR
    raw = md.SerializeToString()
    with sl.create_file_writer(logdir).as_default(step=1) as w:
        assert sl.write("a", 1.0, metadata=np.array(raw))
        assert sl.write("b", 1.0, metadata=np.array(raw, dtype=object))
        with pytest.raises(ValueError, match="write: 'metadata' is not a serialized"):
            sl.write("c", 1.0, metadata=np.array(b"\xff\xff"))
        with pytest.raises(TypeError, match="write: 'metadata'"):
            sl.write("c", 1.0, metadata=np.array(3))
        with pytest.raises(TypeError, match="write: 'metadata'"):
            sl.write("c", 1.0, metadata=np.array([raw, raw]))
    w.close()
    values = [v for ev in tb_events(only_file(logdir)) for v in ev.summary.value]
    assert [(v.tag, v.metadata) for v in values] == [("a", md), ("b", md)]


def quiet_scalar(name: str, value: float, step: int | None = None) -> bool:
    """scalar() with summarylib's no-default-writer hint silenced."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sl.scalar(name, value, step=step)


def test_closing_the_default_writer_clears_it(tmp_path: Path) -> None:
    a = sl.create_file_writer(tmp_path / "a")
    a.set_as_default(step=0)
    assert sl.scalar("x", 1.0)
    a.close()
    assert not sl.should_record_summaries()
    b = sl.create_file_writer(tmp_path / "b")  # a new writer, not made the default
    assert quiet_scalar("x", 1.0) is False  # no WriterClosedError naming a's file
    b.set_as_default(step=0)
    assert sl.scalar("y", 1.0)
    b.close()
    assert quiet_scalar("y", 1.0) is False

    # Closed while it is the default of another thread.
    c = sl.create_file_writer(tmp_path / "c")
    ready, closed = threading.Event(), threading.Event()
    seen: list[object] = []

    def other() -> None:
        c.set_as_default(step=0)
        seen.append(sl.scalar("z", 1.0))
        ready.set()
        closed.wait(10)
        seen.append(sl.should_record_summaries())
        seen.append(quiet_scalar("z", 2.0))

    t = threading.Thread(target=other)
    t.start()
    assert ready.wait(10)
    c.close()
    closed.set()
    t.join(10)
    assert seen == [True, False, False]

    # Closed inside its own as_default() block, and inside another writer's block.
    d = sl.create_file_writer(tmp_path / "d")
    e = sl.create_file_writer(tmp_path / "e")
    with d.as_default(step=0):
        d.close()
        assert not sl.should_record_summaries()
        assert quiet_scalar("w", 1.0) is False
    e.set_as_default(step=0)
    inner = sl.create_file_writer(tmp_path / "inner")
    with inner.as_default():
        e.close()
        assert sl.scalar("v", 1.0)  # inner is still the default here
    assert not sl.should_record_summaries()  # e, closed meanwhile, is not restored
    inner.close()
    assert [t for t, _ in tags_and_steps(only_file(tmp_path / "a"))] == ["x"]
    assert [t for t, _ in tags_and_steps(only_file(tmp_path / "b"))] == ["y"]
    assert [t for t, _ in tags_and_steps(only_file(tmp_path / "c"))] == ["z"]
    assert [t for t, _ in tags_and_steps(only_file(tmp_path / "inner"))] == ["v"]


def run_fresh(code: str, logdir: Path) -> list[str]:
    """Run ``code`` in a new interpreter (the hint is once per process); its stdout lines."""
    import os
    import subprocess
    import sys
    import textwrap

    prelude = (
        "import threading, warnings\n"
        "import summarylib as sl\n"
        "warnings.simplefilter('always')\n"  # show every warning issued: 'once' is ours
        f"logdir = {str(logdir)!r}\n"
        "got = []\n"
        "warnings.showwarning = lambda m, c, f, n, *a: got.append((c.__name__, str(m), f))\n"
    )
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_no_default_writer_hint_once_while_a_writer_is_open(logdir: Path) -> None:
    out = run_fresh(
        """
        assert sl.scalar("x", 1.0, step=0) is False  # no writer anywhere: silent
        w = sl.create_noop_writer()
        with w.as_default():
            assert sl.scalar("x", 1.0, step=0) is False  # a no-op writer is not open
        assert got == []
        w = sl.create_file_writer(logdir)  # the classic mistake: never made the default
        assert sl.scalar("loss", 1.0, step=0) is False
        assert sl.histogram("h", [1.0], step=0) is False
        assert sl.scalars({"a": 1.0}, step=0) is False
        for category, message, filename in got:
            print(category)
            print(message)
            print(filename)
        """,
        logdir,
    )
    category, message, filename = out
    assert category == "NoDefaultWriterWarning"
    assert "scalar() wrote nothing" in message and str(logdir) in message
    assert "set_as_default()" in message and "as_default()" in message
    assert "per thread" in message
    assert filename == "<string>"  # points at the caller's line, not at summarylib


def test_no_hint_from_compiled_code_traced_for_a_call_that_asks_for_nothing(
    logdir: Path,
) -> None:
    pytest.importorskip("jax")
    out = run_fresh(
        """
        import jax.numpy as jnp
        from summarylib.integrations.jax import jit

        @jit
        def step(x, i):
            sl.scalar("loss", x.sum(), step=i)
            return x + 1

        def hints():
            return sum(c == "NoDefaultWriterWarning" for c, _, _ in got)

        w = sl.create_file_writer(logdir)
        with w.as_default():
            step(jnp.ones(2), 0)
            with sl.record_if(False):
                step(jnp.ones(2), 1)  # traces the variant without summaries
        print(hints())
        step(jnp.ones(2), 3)  # a file writer open, none the default: the classic mistake
        print(hints())
        w.close()
        """,
        logdir,
    )
    assert out == ["0", "1"]


def test_no_default_writer_hint_for_another_thread(logdir: Path) -> None:
    out = run_fresh(
        """
        w = sl.create_file_writer(logdir)
        w.set_as_default(step=0)
        assert sl.scalar("main", 1.0)
        assert got == []  # the path with a writer set never warns
        results = []
        t = threading.Thread(target=lambda: results.append(sl.text("t", "hi", step=0)))
        t.start(); t.join()
        print(results, [c for c, _, _ in got])
        w.close()
        assert sl.scalar("after", 1.0, step=0) is False  # closed: no writer open any more
        print(len(got))
        """,
        logdir,
    )
    assert out == ["[False] ['NoDefaultWriterWarning']", "1"]


def test_no_hint_once_every_writer_is_closed(logdir: Path) -> None:
    out = run_fresh(
        """
        w = sl.create_file_writer(logdir)
        w.close()
        assert sl.scalar("x", 1.0, step=0) is False
        off = sl.SummaryWriter(logdir, write_to_disk=False)
        other = sl.create_file_writer(logdir)
        assert off.add_scalar("x", 1.0, 0) is False  # writes nothing by design: no hint
        assert off.add_text("x", "t", 0) is False
        print(len(got))
        other.close()
        """,
        logdir,
    )
    assert out == ["0"]


class GatedOutput(sl.MemoryOutput):
    """Writes after the first record (the file's header) wait for ``gate``."""

    def __init__(self) -> None:
        super().__init__(name="/gated/events.out.tfevents.test")
        self.gate = threading.Event()
        self.writing = threading.Event()
        self.writes = 0

    def write(self, data: bytes) -> None:
        if self.writes:
            self.writing.set()
            assert self.gate.wait(60)
        self.writes += 1
        super().write(data)


def count_records(data: bytes) -> int:
    import struct

    pos = n = 0
    while pos < len(data):
        pos += struct.unpack_from("<Q", data, pos)[0] + 16
        n += 1
    return n


def test_leaving_as_default_returns_once_the_blocks_events_are_written() -> None:
    # TensorFlow's exit: the block's events are written when it ends. On an output that
    # is not a local file (here: one whose writes wait for a gate), the block waits for
    # the writer thread's write.
    out = GatedOutput()
    # No policy would write these events: only the end of the block asks for it.
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    left = threading.Event()

    def one_step() -> None:
        with w.as_default(step=0):
            assert sl.scalar("x", 1.0)
        left.set()

    t = threading.Thread(target=one_step)
    t.start()
    try:
        assert out.writing.wait(30)  # the writer thread was asked to write at once
        assert not left.wait(0.2)  # and the block waits for that write
    finally:
        out.gate.set()
        t.join(30)
    assert left.is_set()
    assert count_records(out.getvalue()) == 2  # no flush() needed
    w.close()


def test_an_unreferenced_writer_is_written_when_its_block_ends(logdir: Path) -> None:
    # The tf.summary idiom: nothing keeps the writer after the block, so it is closed
    # (its events written) as soon as the block ends, not when the garbage collector runs.
    import gc

    gc.disable()  # only reference counting may close it
    try:
        with sl.create_file_writer(logdir).as_default(step=3):
            assert sl.scalar("x", 1.0)
        assert tags_and_steps(only_file(logdir)) == [("x", 3)]
        out = sl.MemoryOutput()
        with sl.create_writer(out).as_default(step=3):
            assert sl.scalar("x", 1.0)
        assert out.closed  # closed, not merely flushed
        assert count_records(out.getvalue()) == 2
    finally:
        gc.enable()
