"""summarylib.proto: generated code is current, and matches TensorBoard's protos.

Three kinds of evidence that our protos are interchangeable with TensorBoard's:
descriptor parity (every field's name, number, type, label, packed-ness, oneof and enum
values), random messages that serialize to the same bytes on both sides and parse across,
and a few serialized messages worked out by hand.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
GENERATE = REPO / "proto" / "generate.py"

FDP = descriptor_pb2.FieldDescriptorProto
# Hypothesis budget: a quarter of the active profile's, so the default run stays fast and
# HYPOTHESIS_PROFILE=thorough still scales it up.
EXAMPLES = max(settings().max_examples // 4, 10)

# Descriptor classes differ between protobuf backends (upb, pure Python) and so do their
# stubs; the helpers here read only attributes every backend has, and take them as Any.
Descriptor = Any
EnumDescriptor = Any
FieldDescriptor = Any
FileDescriptor = Any


# --------------------------------------------------------------------------------------
# Which of our messages mirror which of TensorBoard's.

TB = "tensorboard.compat.proto"
TBP = "tensorboard.plugins"

# (our module, TensorBoard module, message names; None = every top-level message and enum).
PAIRS: list[tuple[str, str, tuple[str, ...] | None]] = [
    ("types_pb2", f"{TB}.types_pb2", None),
    ("resource_handle_pb2", f"{TB}.resource_handle_pb2", None),
    ("tensor_shape_pb2", f"{TB}.tensor_shape_pb2", None),
    ("tensor_pb2", f"{TB}.tensor_pb2", None),
    ("full_type_pb2", f"{TB}.full_type_pb2", None),
    ("histogram_pb2", f"{TB}.histogram_pb2", None),
    ("summary_pb2", f"{TB}.summary_pb2", None),
    ("event_pb2", f"{TB}.event_pb2", None),
    ("attr_value_pb2", f"{TB}.attr_value_pb2", None),
    ("node_def_pb2", f"{TB}.node_def_pb2", None),
    ("op_def_pb2", f"{TB}.op_def_pb2", None),
    ("function_pb2", f"{TB}.function_pb2", None),
    ("versions_pb2", f"{TB}.versions_pb2", None),
    ("graph_debug_info_pb2", f"{TB}.graph_debug_info_pb2", None),
    ("graph_pb2", f"{TB}.graph_pb2", None),
    ("allocation_description_pb2", f"{TB}.allocation_description_pb2", None),
    ("tensor_description_pb2", f"{TB}.tensor_description_pb2", None),
    ("step_stats_pb2", f"{TB}.step_stats_pb2", None),
    ("cost_graph_pb2", f"{TB}.cost_graph_pb2", None),
    ("run_metadata_pb2", f"{TB}.config_pb2", ("RunMetadata", "SessionMetadata")),
    ("plugin_data_pb2", f"{TBP}.scalar.plugin_data_pb2", None),
    ("plugin_data_pb2", f"{TBP}.histogram.plugin_data_pb2", None),
    ("plugin_data_pb2", f"{TBP}.image.plugin_data_pb2", None),
    ("plugin_data_pb2", f"{TBP}.audio.plugin_data_pb2", None),
    ("plugin_data_pb2", f"{TBP}.text.plugin_data_pb2", None),
    ("plugin_data_pb2", f"{TBP}.pr_curve.plugin_data_pb2", None),
    ("custom_scalar_pb2", f"{TBP}.custom_scalar.layout_pb2", None),
    ("hparams_api_pb2", f"{TBP}.hparams.api_pb2", None),
    ("hparams_plugin_data_pb2", f"{TBP}.hparams.plugin_data_pb2", None),
    ("mesh_plugin_data_pb2", f"{TBP}.mesh.plugin_data_pb2", None),
    ("projector_config_pb2", f"{TBP}.projector.projector_config_pb2", None),
]


def ours(module: str) -> ModuleType:
    return importlib.import_module(f"summarylib.proto.{module}")


def theirs(module: str) -> ModuleType:
    return importlib.import_module(module)


def mirrored_names(
    pair: tuple[str, str, tuple[str, ...] | None],
) -> tuple[list[str], list[str]]:
    """(message names, enum names) of TensorBoard's file that ours must mirror."""
    _, tb_module, only = pair
    file = theirs(tb_module).DESCRIPTOR
    messages = [n for n in file.message_types_by_name if only is None or n in only]
    enums = [n for n in file.enum_types_by_name if only is None or n in only]
    return messages, enums


def pair_id(pair: tuple[str, str, tuple[str, ...] | None]) -> str:
    return pair[1].removeprefix(f"{TB}.").removeprefix(f"{TBP}.")


# --------------------------------------------------------------------------------------
# Generated code is what proto/generate.py produces.


def load_generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("summarylib_proto_generate", GENERATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generate() -> ModuleType:
    return load_generate()


def test_committed_modules_equal_fresh_generation(generate: ModuleType) -> None:
    required = generate.REQUIRED_GRPCIO_TOOLS
    found = generate.installed_grpcio_tools()
    if found != required:
        pytest.skip(f"grpcio-tools=={required} is not installed (found {found})")
    assert generate.check() == []


def test_every_proto_source_has_generated_modules(generate: ModuleType) -> None:
    stems = {path.stem for path in generate.proto_sources()}
    committed = {path.name for path in generate.generated_files(REPO)}
    expected = {f"{stem}_pb2{suffix}" for stem in stems for suffix in (".py", ".pyi")}
    assert committed == expected


def test_generator_refuses_other_grpcio_tools(
    generate: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(generate, "installed_grpcio_tools", lambda: "1.85.1")
    with pytest.raises(generate.GeneratorError, match=r"grpcio-tools==1\.62\.3.*1\.85\.1"):
        generate.require_pinned_generator()
    assert generate.main(["--check"]) == 2
    assert "grpcio-tools==1.62.3" in capsys.readouterr().err


def test_check_reports_drift(generate: ModuleType, tmp_path: Path) -> None:
    # differences() on a doctored copy: one file edited, one missing, one stale.
    fresh = tmp_path / "fresh"
    committed = tmp_path / "committed"
    for root in (fresh, committed):
        (root / "summarylib" / "proto").mkdir(parents=True)
    for name, body in (("a_pb2.py", b"a"), ("b_pb2.py", b"b"), ("c_pb2.pyi", b"c")):
        (fresh / "summarylib" / "proto" / name).write_bytes(body)
    (committed / "summarylib" / "proto" / "a_pb2.py").write_bytes(b"a")
    (committed / "summarylib" / "proto" / "b_pb2.py").write_bytes(b"edited")
    (committed / "summarylib" / "proto" / "old_pb2.py").write_bytes(b"old")
    (committed / "summarylib" / "proto" / "__init__.py").write_bytes(b"")
    assert generate.differences(fresh, committed) == [
        "missing: summarylib/proto/c_pb2.pyi",
        "stale (no .proto source): summarylib/proto/old_pb2.py",
        "out of date: summarylib/proto/b_pb2.py",
    ]


def test_importing_the_package_loads_no_protobuf() -> None:
    code = (
        "import sys, summarylib, summarylib.proto\n"
        "bad = [m for m in sys.modules if m.startswith('google.protobuf') or m.endswith('_pb2')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# --------------------------------------------------------------------------------------
# Descriptor parity.


def _strip_package(full_name: str, package: str) -> str:
    prefix = package + "."
    return full_name[len(prefix) :] if package and full_name.startswith(prefix) else full_name


def _type_ref(field: FieldDescriptor) -> str:
    """The field's message or enum type without its package (google.protobuf.* kept)."""
    target: Descriptor | EnumDescriptor | None = field.message_type or field.enum_type
    if target is None:
        return ""
    package: str = target.file.package
    full_name: str = target.full_name
    if package.startswith("google.protobuf"):
        return full_name
    return _strip_package(full_name, package)


def _enum_facts(enum: EnumDescriptor) -> dict[str, Any]:
    proto = descriptor_pb2.EnumDescriptorProto()
    enum.CopyToProto(proto)
    return {
        "values": [(value.name, value.number) for value in proto.value],
        "deprecated": proto.options.deprecated,
        "reserved": [(r.start, r.end) for r in proto.reserved_range],
    }


def _packed(field: descriptor_pb2.FieldDescriptorProto, proto2: bool) -> tuple[bool | None, bool]:
    """(explicit [packed] option or None, effective packed-ness on the wire)."""
    explicit = field.options.packed if field.options.HasField("packed") else None
    scalar_number = field.type not in (FDP.TYPE_STRING, FDP.TYPE_BYTES, FDP.TYPE_MESSAGE)
    # Repeated numbers are packed by default in proto3 only.
    default = field.label == FDP.LABEL_REPEATED and scalar_number and not proto2
    return explicit, default if explicit is None else explicit


def _syntax(file: FileDescriptor) -> str:
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    return proto.syntax


def message_facts(message: Descriptor) -> dict[str, Any]:
    """Everything about a message that affects the wire or the generated API."""
    proto = descriptor_pb2.DescriptorProto()
    message.CopyToProto(proto)
    proto2 = _syntax(message.file) != "proto3"
    fields = []
    for field, field_proto in zip(message.fields, proto.field, strict=True):
        oneof = field.containing_oneof
        repeated = field_proto.label == FDP.LABEL_REPEATED
        # Explicit presence: a set zero is still serialized (proto2, messages, oneofs).
        explicit = field_proto.type == FDP.TYPE_MESSAGE or oneof is not None or proto2
        fields.append(
            {
                "name": field_proto.name,
                "number": field_proto.number,
                "type": FDP.Type.Name(field_proto.type),
                "label": FDP.Label.Name(field_proto.label),
                "type_ref": _type_ref(field),
                "packed": _packed(field_proto, proto2),
                "oneof": None if oneof is None else oneof.name,
                "proto3_optional": field_proto.proto3_optional,
                "presence": explicit and not repeated,
                "default": field_proto.default_value,
                "deprecated": field_proto.options.deprecated,
                "json_name": field.json_name,
            }
        )
    return {
        "name": message.name,
        "fields": fields,
        "oneofs": [oneof.name for oneof in message.oneofs],
        "nested": [message_facts(nested) for nested in message.nested_types],
        "enums": [(e.name, _enum_facts(e)) for e in message.enum_types],
        "map_entry": proto.options.map_entry,
        "deprecated": proto.options.deprecated,
        "reserved": [(r.start, r.end) for r in proto.reserved_range],
        "reserved_names": list(proto.reserved_name),
    }


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_descriptors_match_tensorboard(pair: tuple[str, str, tuple[str, ...] | None]) -> None:
    our_file = ours(pair[0]).DESCRIPTOR
    tb_file = theirs(pair[1]).DESCRIPTOR
    messages, enums = mirrored_names(pair)
    assert messages or enums
    for name in messages:
        assert name in our_file.message_types_by_name, f"{pair[0]} lacks {name}"
        assert message_facts(our_file.message_types_by_name[name]) == message_facts(
            tb_file.message_types_by_name[name]
        )
    for name in enums:
        assert name in our_file.enum_types_by_name, f"{pair[0]} lacks enum {name}"
        assert _enum_facts(our_file.enum_types_by_name[name]) == _enum_facts(
            tb_file.enum_types_by_name[name]
        )
    # proto3 everywhere except graph_debug_info.proto, which TensorFlow keeps in proto2.
    assert _syntax(our_file) == _syntax(tb_file)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_descriptor_protos_equal_up_to_package(
    pair: tuple[str, str, tuple[str, ...] | None],
) -> None:
    # Stricter than the facts above: the whole DescriptorProto, so nothing is missed.
    def normalized(message: Descriptor) -> descriptor_pb2.DescriptorProto:
        proto = descriptor_pb2.DescriptorProto()
        message.CopyToProto(proto)

        def rename(node: descriptor_pb2.DescriptorProto) -> None:
            for field in node.field:
                for old in (".tensorboard.", ".summarylib."):
                    if field.type_name.startswith(old):
                        field.type_name = "." + field.type_name[len(old) :]
            for nested in node.nested_type:
                rename(nested)

        rename(proto)
        return proto

    our_file = ours(pair[0]).DESCRIPTOR
    tb_file = theirs(pair[1]).DESCRIPTOR
    for name in mirrored_names(pair)[0]:
        ours_proto = normalized(our_file.message_types_by_name[name])
        assert ours_proto == normalized(tb_file.message_types_by_name[name]), name


def test_no_extra_messages_and_no_tensorflow_packages() -> None:
    mirrored: dict[str, set[str]] = {}
    for pair in PAIRS:
        messages, enums = mirrored_names(pair)
        mirrored.setdefault(pair[0], set()).update(messages, enums)
    for module, names in mirrored.items():
        file = ours(module).DESCRIPTOR
        assert set(file.message_types_by_name) | set(file.enum_types_by_name) == names
        assert file.package.split(".")[0] == "summarylib"
        for dependency in file.dependencies:
            assert dependency.package.split(".")[0] in ("summarylib", "google"), dependency.name


# --------------------------------------------------------------------------------------
# Random messages: same bytes on both sides, and each side parses the other's.

MAX_DEPTH = 4  # message nesting cut-off for random trees (recursive types are common)
MAX_ITEMS = 2  # elements per repeated or map field

Tree = dict[str, Any]

_SCALARS: dict[int, st.SearchStrategy[Any]] = {
    FDP.TYPE_DOUBLE: st.floats(),
    FDP.TYPE_FLOAT: st.floats(width=32),
    FDP.TYPE_INT32: st.integers(-(2**31), 2**31 - 1),
    FDP.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    FDP.TYPE_UINT32: st.integers(0, 2**32 - 1),
    FDP.TYPE_UINT64: st.integers(0, 2**64 - 1),
    FDP.TYPE_FIXED64: st.integers(0, 2**64 - 1),
    FDP.TYPE_BOOL: st.booleans(),
    FDP.TYPE_STRING: st.text(max_size=8),
    FDP.TYPE_BYTES: st.binary(max_size=8),
}


def _field_protos(message: Descriptor) -> list[descriptor_pb2.FieldDescriptorProto]:
    proto = descriptor_pb2.DescriptorProto()
    message.CopyToProto(proto)
    return list(proto.field)


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _single(
    field: FieldDescriptor, proto: descriptor_pb2.FieldDescriptorProto, depth: int
) -> st.SearchStrategy[Any] | None:
    """Strategy for one element of the field, or None when too deep to include."""
    if proto.type == FDP.TYPE_MESSAGE:
        if depth >= MAX_DEPTH:
            return None
        return trees(field.message_type, depth + 1)
    if proto.type == FDP.TYPE_ENUM:
        return st.sampled_from([value.number for value in field.enum_type.values])
    return _SCALARS[proto.type]


def _as_member(name: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Tree]:
    return strategy.map(lambda value: {name: value})


_TREES: dict[tuple[str, int], st.SearchStrategy[Tree]] = {}


def trees(message: Descriptor, depth: int = 0) -> st.SearchStrategy[Tree]:
    """Random field values for `message`, as a tree of plain Python values.

    The same tree can fill our message and TensorBoard's, since field names match.
    At most one member of each oneof is set.
    """
    key = (message.full_name, depth)
    if key in _TREES:
        return _TREES[key]
    plain: dict[str, st.SearchStrategy[Any]] = {}
    oneofs: dict[str, dict[str, st.SearchStrategy[Any]]] = {}
    for field, proto in zip(message.fields, _field_protos(message), strict=True):
        if _is_map(field):
            key_field, value_field = field.message_type.fields
            key_proto, value_proto = _field_protos(field.message_type)
            values = _single(value_field, value_proto, depth)
            if values is None:
                continue
            keys = _single(key_field, key_proto, depth)
            assert keys is not None
            strategy: st.SearchStrategy[Any] = st.dictionaries(keys, values, max_size=MAX_ITEMS)
        else:
            element = _single(field, proto, depth)
            if element is None:
                continue
            repeated = proto.label == FDP.LABEL_REPEATED
            strategy = st.lists(element, max_size=MAX_ITEMS) if repeated else element
        oneof = field.containing_oneof
        if oneof is not None and not proto.proto3_optional:
            oneofs.setdefault(oneof.name, {})[field.name] = strategy
        else:
            plain[field.name] = strategy

    def one_member(members: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Tree]:
        choices: list[st.SearchStrategy[Tree]] = [st.just({})]
        choices += [_as_member(name, strategy) for name, strategy in members.items()]
        return st.one_of(choices)

    parts = [st.fixed_dictionaries({}, optional=plain)]
    parts += [one_member(members) for members in oneofs.values()]

    def merge(dicts: tuple[Tree, ...]) -> Tree:
        merged: Tree = {}
        for part in dicts:
            merged.update(part)
        return merged

    result = st.tuples(*parts).map(merge)
    _TREES[key] = result
    return result


def fill(message: Message, tree: Tree) -> Message:
    """Set the tree's values on message (ours or TensorBoard's); returns message."""
    descriptor: Descriptor = message.DESCRIPTOR
    protos = {p.name: p for p in _field_protos(descriptor)}
    for name, value in tree.items():
        field = descriptor.fields_by_name[name]
        proto = protos[name]
        container = getattr(message, name)
        if _is_map(field):
            value_is_message = field.message_type.fields_by_name["value"].message_type is not None
            for key, item in value.items():
                if value_is_message:
                    fill(container[key], item)
                else:
                    container[key] = item
        elif proto.label == FDP.LABEL_REPEATED:
            if proto.type == FDP.TYPE_MESSAGE:
                for item in value:
                    fill(container.add(), item)
            else:
                container.extend(value)
        elif proto.type == FDP.TYPE_MESSAGE:
            container.SetInParent()  # present even when the tree leaves it empty
            fill(container, value)
        else:
            setattr(message, name, value)
    return message


def serialize(message: Message) -> bytes:
    # Deterministic: map entries sorted by key, the same on both sides.
    return message.SerializeToString(deterministic=True)


def assert_interchangeable(
    our_class: type[Message], tb_class: type[Message], tree: Tree
) -> tuple[bytes, Message, Message]:
    """Build from the tree on both sides; bytes equal; each side parses the other's."""
    ours_message = fill(our_class(), tree)
    tb_message = fill(tb_class(), tree)
    data = serialize(ours_message)
    assert serialize(tb_message) == data
    parsed_by_tb = tb_class.FromString(data)
    parsed_by_us = our_class.FromString(serialize(tb_message))
    assert serialize(parsed_by_tb) == data
    assert serialize(parsed_by_us) == data
    return data, parsed_by_tb, parsed_by_us


def classes(our_module: str, tb_module: str, name: str) -> tuple[type[Message], type[Message]]:
    our_class: type[Message] = getattr(ours(our_module), name)
    tb_class: type[Message] = getattr(theirs(tb_module), name)
    return our_class, tb_class


ROUND_TRIPS: list[tuple[str, str, str]] = [
    ("summary_pb2", f"{TB}.summary_pb2", "Summary"),
    ("summary_pb2", f"{TB}.summary_pb2", "SummaryMetadata"),
    ("tensor_pb2", f"{TB}.tensor_pb2", "TensorProto"),
    ("histogram_pb2", f"{TB}.histogram_pb2", "HistogramProto"),
    ("graph_pb2", f"{TB}.graph_pb2", "GraphDef"),
    ("node_def_pb2", f"{TB}.node_def_pb2", "NodeDef"),
    ("attr_value_pb2", f"{TB}.attr_value_pb2", "AttrValue"),
    ("function_pb2", f"{TB}.function_pb2", "FunctionDefLibrary"),
    ("run_metadata_pb2", f"{TB}.config_pb2", "RunMetadata"),
    ("step_stats_pb2", f"{TB}.step_stats_pb2", "StepStats"),
    ("plugin_data_pb2", f"{TBP}.scalar.plugin_data_pb2", "ScalarPluginData"),
    ("plugin_data_pb2", f"{TBP}.histogram.plugin_data_pb2", "HistogramPluginData"),
    ("plugin_data_pb2", f"{TBP}.image.plugin_data_pb2", "ImagePluginData"),
    ("plugin_data_pb2", f"{TBP}.audio.plugin_data_pb2", "AudioPluginData"),
    ("plugin_data_pb2", f"{TBP}.text.plugin_data_pb2", "TextPluginData"),
    ("plugin_data_pb2", f"{TBP}.pr_curve.plugin_data_pb2", "PrCurvePluginData"),
    ("custom_scalar_pb2", f"{TBP}.custom_scalar.layout_pb2", "Layout"),
    ("hparams_plugin_data_pb2", f"{TBP}.hparams.plugin_data_pb2", "HParamsPluginData"),
    ("hparams_api_pb2", f"{TBP}.hparams.api_pb2", "ListSessionGroupsRequest"),
    ("mesh_plugin_data_pb2", f"{TBP}.mesh.plugin_data_pb2", "MeshPluginData"),
    ("projector_config_pb2", f"{TBP}.projector.projector_config_pb2", "ProjectorConfig"),
]


@pytest.mark.parametrize("entry", ROUND_TRIPS, ids=lambda entry: entry[2])
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_random_messages_interchangeable(entry: tuple[str, str, str], data: st.DataObject) -> None:
    our_class, tb_class = classes(*entry)
    tree = data.draw(trees(our_class.DESCRIPTOR), label="tree")
    assert_interchangeable(our_class, tb_class, tree)


def _oneof_members(module: str, message: str, oneof: str) -> list[str]:
    descriptor: Descriptor = getattr(ours(module), message.split(".")[0]).DESCRIPTOR
    for part in message.split(".")[1:]:
        descriptor = descriptor.nested_types_by_name[part]
    return [field.name for field in descriptor.oneofs_by_name[oneof].fields]


def _event_classes() -> tuple[type[Message], type[Message]]:
    return classes("event_pb2", f"{TB}.event_pb2", "Event")


@st.composite
def event_trees(draw: st.DrawFn, what: str) -> Tree:
    """A random Event with `what` set; graph_def and run_metadata hold real messages."""
    our_event = _event_classes()[0]
    tree = dict(draw(trees(our_event.DESCRIPTOR)))
    for member in _oneof_members("event_pb2", "Event", "what"):
        tree.pop(member, None)
    if what == "graph_def":
        graph = draw(trees(ours("graph_pb2").GraphDef.DESCRIPTOR))
        tree[what] = serialize(fill(ours("graph_pb2").GraphDef(), graph))
    elif what == "tagged_run_metadata":
        run = draw(trees(ours("run_metadata_pb2").RunMetadata.DESCRIPTOR))
        tag = draw(st.text(max_size=8))
        run_bytes = serialize(fill(ours("run_metadata_pb2").RunMetadata(), run))
        tree[what] = {"tag": tag, "run_metadata": run_bytes}
    else:
        field = our_event.DESCRIPTOR.fields_by_name[what]
        element = _single(field, _field_protos(our_event.DESCRIPTOR)[field.index], 0)
        assert element is not None
        tree[what] = draw(element)
    return tree


EVENT_KINDS = _oneof_members("event_pb2", "Event", "what")
VALUE_KINDS = _oneof_members("summary_pb2", "Summary.Value", "value")


@pytest.mark.parametrize("what", EVENT_KINDS)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_random_events_of_every_kind(what: str, data: st.DataObject) -> None:
    our_class, tb_class = _event_classes()
    tree = data.draw(event_trees(what), label="event")
    _, parsed_by_tb, parsed_by_us = assert_interchangeable(our_class, tb_class, tree)
    assert parsed_by_tb.WhichOneof("what") == parsed_by_us.WhichOneof("what") == what
    # The payloads kept as bytes parse on the other side too.
    if what == "graph_def":
        graph_class, tb_graph_class = classes("graph_pb2", f"{TB}.graph_pb2", "GraphDef")
        graph_bytes = tree["graph_def"]
        assert serialize(tb_graph_class.FromString(graph_bytes)) == graph_bytes
        assert serialize(graph_class.FromString(graph_bytes)) == graph_bytes
    if what == "tagged_run_metadata":
        tb_run_class = theirs(f"{TB}.config_pb2").RunMetadata
        run_bytes = tree["tagged_run_metadata"]["run_metadata"]
        assert serialize(tb_run_class.FromString(run_bytes)) == run_bytes


@pytest.mark.parametrize("kind", VALUE_KINDS)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_random_summary_values_of_every_kind(kind: str, data: st.DataObject) -> None:
    our_event, tb_event = _event_classes()
    value_descriptor = ours("summary_pb2").Summary.Value.DESCRIPTOR
    value = dict(data.draw(trees(value_descriptor, depth=2), label="value"))
    for member in VALUE_KINDS:
        value.pop(member, None)
    field = value_descriptor.fields_by_name[kind]
    element = _single(field, _field_protos(value_descriptor)[field.index], 2)
    assert element is not None
    value[kind] = data.draw(element, label=kind)
    tree: Tree = {"wall_time": 1.0, "step": 7, "summary": {"value": [value]}}
    _, parsed_by_tb, _ = assert_interchangeable(our_event, tb_event, tree)
    assert parsed_by_tb.summary.value[0].WhichOneof("value") == kind  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------
# Hand-computed bytes.


FIXED: list[tuple[str, str, str, Tree, str]] = [
    # (id, our module, message, fields, hex), each worked out from the wire format.
    (
        "scalars metadata",
        "summary_pb2",
        "SummaryMetadata",
        {"plugin_data": {"plugin_name": "scalars"}},
        "0a09 0a07 7363616c617273",
    ),
    (
        "scalars metadata, DATA_CLASS_SCALAR",
        "summary_pb2",
        "SummaryMetadata",
        {"plugin_data": {"plugin_name": "scalars"}, "data_class": 1},
        "0a09 0a07 7363616c617273 2001",
    ),
    (
        "rank-0 float tensor 1.0",  # dtype 1, empty shape present, packed float_val
        "tensor_pb2",
        "TensorProto",
        {"dtype": 1, "tensor_shape": {}, "float_val": [1.0]},
        "0801 1200 2a04 0000803f",
    ),
    (
        "string tensor of shape [2]",
        "tensor_pb2",
        "TensorProto",
        {"dtype": 7, "tensor_shape": {"dim": [{"size": 2}]}, "string_val": [b"ab", b""]},
        "0807 1204 1202 0802 4202 6162 4200",
    ),
    (
        "file_version event",  # wall_time 1.5 (double), "brain.Event:2"
        "event_pb2",
        "Event",
        {"wall_time": 1.5, "file_version": "brain.Event:2"},
        "09 000000000000f83f 1a0d 627261696e2e4576656e743a32",
    ),
    (
        "session_log START at step 3",
        "event_pb2",
        "Event",
        {"step": 3, "session_log": {"status": 1}},
        "1003 3a02 0801",
    ),
    (
        "tagged run metadata",
        "event_pb2",
        "Event",
        {"tagged_run_metadata": {"tag": "s1", "run_metadata": b"\x0a\x00"}},
        "4208 0a02 7331 1202 0a00",
    ),
    (
        "legacy simple_value",  # float 0.5 = 0x3f000000
        "summary_pb2",
        "Summary",
        {"value": [{"tag": "x", "simple_value": 0.5}]},
        "0a08 0a01 78 15 0000003f",
    ),
    (
        "histogram with packed doubles",
        "histogram_pb2",
        "HistogramProto",
        {"num": 1.0, "bucket_limit": [1.0], "bucket": [1.0]},
        "19 000000000000f03f 3208 000000000000f03f 3a08 000000000000f03f",
    ),
    (
        "graph with one Const node",
        "graph_pb2",
        "GraphDef",
        {"node": [{"name": "a", "op": "Const"}]},
        "0a0a 0a01 61 1205 436f6e7374",
    ),
    ("attr type DT_FLOAT", "attr_value_pb2", "AttrValue", {"type": 1}, "3001"),
    (
        "attr list(int) [1, 2]",
        "attr_value_pb2",
        "AttrValue",
        {"list": {"i": [1, 2]}},
        "0a04 1a02 0102",
    ),
    ("audio WAV", "plugin_data_pb2", "AudioPluginData", {"encoding": 11}, "100b"),
    (
        "pr_curves 201 thresholds",
        "plugin_data_pb2",
        "PrCurvePluginData",
        {"num_thresholds": 201},
        "10c901",
    ),
    (
        "hparams session end SUCCESS",
        "hparams_plugin_data_pb2",
        "HParamsPluginData",
        {"session_end_info": {"status": 1}},
        "2202 0801",
    ),
    (
        "run metadata: one device",
        "run_metadata_pb2",
        "RunMetadata",
        {"step_stats": {"dev_stats": [{"device": "c"}]}},
        "0a05 0a03 0a01 63",
    ),
]


@pytest.mark.parametrize("vector", FIXED, ids=lambda vector: vector[0])
def test_hand_computed_bytes(vector: tuple[str, str, str, Tree, str]) -> None:
    _, module, name, tree, expected_hex = vector
    expected = bytes.fromhex(expected_hex.replace(" ", ""))
    tb_module = {pair[0]: pair[1] for pair in PAIRS if name in mirrored_names(pair)[0]}[module]
    our_class, tb_class = classes(module, tb_module, name)
    assert serialize(fill(our_class(), tree)) == expected
    # Parsing the bytes gives the same message as building it from the fields.
    assert our_class.FromString(expected) == fill(our_class(), tree)
    assert tb_class.FromString(expected) == fill(tb_class(), tree)


def test_hand_computed_scalar_metadata_fields() -> None:
    summary_pb2 = ours("summary_pb2")
    metadata = summary_pb2.SummaryMetadata.FromString(bytes.fromhex("0a090a077363616c617273"))
    assert metadata.plugin_data.plugin_name == "scalars"
    assert metadata.plugin_data.content == b""
    assert metadata.display_name == ""
    assert metadata.data_class == summary_pb2.DATA_CLASS_UNKNOWN
    assert metadata.HasField("plugin_data")


def test_ours_and_tensorboards_coexist_in_one_process() -> None:
    # Distinct packages: both descriptor sets live in the default pool side by side.
    our_event = ours("event_pb2").Event
    tb_event = theirs(f"{TB}.event_pb2").Event
    assert our_event.DESCRIPTOR.full_name == "summarylib.Event"
    assert tb_event.DESCRIPTOR.full_name == "tensorboard.Event"
    hparams = ours("hparams_api_pb2")
    assert hparams.DESCRIPTOR.package == "summarylib.hparams"
    assert hparams.DataType.DESCRIPTOR.full_name == "summarylib.hparams.DataType"
    assert ours("types_pb2").DataType.DESCRIPTOR.full_name == "summarylib.DataType"
