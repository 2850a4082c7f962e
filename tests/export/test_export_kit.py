"""The TensorFlow Serving kit in `export/`: every config parses as the message TF Serving
reads it into, agrees with what `keras-bert export` writes, and the Docker files publish
pinned images on 127.0.0.1 only. Fast: no model is built, no Docker engine is needed.

`models.config` parses with `tensorflow-serving-api`'s own `ModelServerConfig`. That package
ships no `BatchingParameters` (session_bundle_config.proto) or `MonitoringConfig`
(monitoring_config.proto) module, so when they are missing the two messages are declared
here with TF Serving 2.20's field names, numbers and types, and the files are parsed into
them with the same strict text-format parser (an unknown field or a bad value fails).
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import shlex

import pytest
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_format,
    wrappers_pb2,
)

from tests.support.reference import require

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KIT = os.path.join(REPO, "export")
DEFAULT_MODEL = "bert"
VERSION = "2.20.0"
# What docker-compose.yml mounts into the container, and where.
CONFIG_FILES = {"models.config": "/config/models.config",
                "batching_parameters.txt": "/config/batching_parameters.txt",
                "batching_parameters_gpu.txt": "/config/batching_parameters_gpu.txt",
                "monitoring.config": "/config/monitoring.config"}


def _read(name: str) -> str:
    with open(os.path.join(KIT, name), encoding="utf-8") as f:
        return f.read()


# --- the protos TF Serving parses the files into -------------------------------------------

_F = descriptor_pb2.FieldDescriptorProto
# message -> [(field name, number, type or message type name, repeated)]
_SCHEMA = {
    "BatchingParameters": [
        ("max_batch_size", 1, ".google.protobuf.Int64Value", False),
        ("batch_timeout_micros", 2, ".google.protobuf.Int64Value", False),
        ("max_enqueued_batches", 3, ".google.protobuf.Int64Value", False),
        ("num_batch_threads", 4, ".google.protobuf.Int64Value", False),
        ("thread_pool_name", 5, ".google.protobuf.StringValue", False),
        ("allowed_batch_sizes", 6, _F.TYPE_INT64, True),
        ("pad_variable_length_inputs", 7, _F.TYPE_BOOL, False),
        ("enable_large_batch_splitting", 8, ".google.protobuf.BoolValue", False),
        ("max_execution_batch_size", 9, ".google.protobuf.Int64Value", False),
    ],
    "PrometheusConfig": [
        ("enable", 1, _F.TYPE_BOOL, False),
        ("path", 2, _F.TYPE_STRING, False),
    ],
    "MonitoringConfig": [
        ("prometheus_config", 1, ".tensorflow.serving.PrometheusConfig", False),
    ],
}


def _declared_messages() -> dict:
    """`{name: message class}` for `_SCHEMA`, in a private descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name="keras_bert_tests/tf_serving_configs.proto", package="tensorflow.serving",
        syntax="proto3", dependency=[wrappers_pb2.DESCRIPTOR.name])
    for message, fields in _SCHEMA.items():
        proto = file.message_type.add(name=message)
        for name, number, kind, repeated in fields:
            field = proto.field.add(
                name=name, number=number,
                label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
            if isinstance(kind, str):
                field.type, field.type_name = _F.TYPE_MESSAGE, kind
            else:
                field.type = kind
    pool.Add(file)
    return {name: message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"tensorflow.serving.{name}")) for name in _SCHEMA}


def _message_class(module: str, name: str):
    """TF Serving's generated class when installed, else the declared one."""
    try:
        return getattr(__import__(module, fromlist=[name]), name)
    except ImportError:
        return _declared_messages()[name]


def _batching_parameters(name: str = "batching_parameters.txt"):
    cls = _message_class(
        "tensorflow_serving.servables.tensorflow.session_bundle_config_pb2",
        "BatchingParameters")
    return text_format.Parse(_read(name), cls())


def _batching_file(gpu: bool) -> str:
    return CONFIG_FILES["batching_parameters_gpu.txt" if gpu else "batching_parameters.txt"]


def _monitoring_config():
    cls = _message_class("tensorflow_serving.config.monitoring_config_pb2", "MonitoringConfig")
    return text_format.Parse(_read("monitoring.config"), cls())


def _model_server_config():
    # tensorflow-serving-api (the `serving` extra) is imported here: without it only the
    # tests that parse models.config skip (fail under CI); the others still run.
    config = require("tensorflow_serving.config.model_server_config_pb2")
    return text_format.Parse(_read("models.config"), config.ModelServerConfig())


def test_declared_schema_is_strict():
    """The declared messages reject what TF Serving rejects: unknown fields, bad values."""
    batching = _declared_messages()["BatchingParameters"]
    with pytest.raises(text_format.ParseError):
        text_format.Parse("max_batch_size: 32", batching())  # a wrapper, not a scalar
    with pytest.raises(text_format.ParseError):
        text_format.Parse("max_batch_sise { value: 32 }", batching())
    with pytest.raises(text_format.ParseError):
        text_format.Parse("prometheus_config { enable: maybe }",
                          _declared_messages()["MonitoringConfig"]())


# --- models.config ----------------------------------------------------------------------------


def test_models_config_serves_bert_from_models_dir():
    config = _model_server_config()
    assert config.WhichOneof("config") == "model_config_list"
    models = list(config.model_config_list.config)
    names = [m.name for m in models]
    assert DEFAULT_MODEL in names
    assert len(set(names)) == len(names), names
    for model in models:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", model.name), model.name
        assert model.base_path == f"/models/{model.name}", model.base_path
        assert model.model_platform == "tensorflow"
        policy = model.model_version_policy
        if policy.WhichOneof("policy_choice") == "latest":
            assert policy.latest.num_versions >= 1


def test_default_model_name_is_bert_everywhere():
    """`keras-bert export` (warmup requests), `serve` and `query` all default to "bert"."""
    tree = ast.parse(open(os.path.join(REPO, "keras_bert", "export", "exporter.py"),
                          encoding="utf-8").read())
    export_model = next(node for node in tree.body
                        if isinstance(node, ast.FunctionDef) and node.name == "write_version")
    args = export_model.args
    positional = [a.arg for a in args.args][len(args.args) - len(args.defaults):]
    defaults = dict(zip(positional, args.defaults, strict=True))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                     if d is not None})
    assert ast.literal_eval(defaults["model_name"]) == DEFAULT_MODEL
    # The warmup requests name that model and `serving_default`.
    warmups = [[ast.unparse(a) for a in node.args[:2]]
               for node in ast.walk(export_model)
               if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "predict_log"]
    assert warmups and all(w == ["model_name", "'serving_default'"] for w in warmups), warmups

    from keras_bert.cli import build_parser

    parser = build_parser()
    for command in (["export", "M", "B"], ["serve", "B"], ["query", "x"]):
        assert parser.parse_args(command).model_name == DEFAULT_MODEL, command


# --- batching_parameters.txt ------------------------------------------------------------------


def _batching_errors(params) -> list[str]:
    """What TF Serving (batching_session.cc) or this kit refuses in `BatchingParameters`."""
    errors = []
    max_batch = params.max_batch_size.value
    if not params.HasField("max_batch_size") or max_batch < 1:
        errors.append("max_batch_size must be set and >= 1")
    if params.HasField("num_batch_threads") and params.num_batch_threads.value < 1:
        errors.append("num_batch_threads must be >= 1")
    sizes = list(params.allowed_batch_sizes)
    if sizes:
        if not all(a < b for a, b in itertools.pairwise(sizes)) or sizes[0] < 1:
            errors.append(f"allowed_batch_sizes {sizes} must be positive and increasing")
        limit = (params.max_execution_batch_size.value
                 if params.enable_large_batch_splitting.value else max_batch)
        if sizes[-1] != limit:
            errors.append(f"last allowed_batch_sizes entry {sizes[-1]} != {limit}")
    if params.pad_variable_length_inputs:  # would pad serve_ids' input_mask with 1s
        errors.append("pad_variable_length_inputs must stay off")
    return errors


@pytest.mark.parametrize("name", ["batching_parameters.txt", "batching_parameters_gpu.txt"])
def test_batching_parameters_are_valid(name):
    params = _batching_parameters(name)
    assert _batching_errors(params) == []
    assert params.batch_timeout_micros.value >= 0
    assert params.max_enqueued_batches.value >= 1
    assert params.allowed_batch_sizes, "allowed_batch_sizes documents the padding rule"
    assert params.allowed_batch_sizes[-1] == params.max_batch_size.value


def test_batching_rule_catches_a_mismatch():
    params = _batching_parameters()
    params.max_batch_size.value = params.allowed_batch_sizes[-1] * 2
    assert any("last allowed_batch_sizes" in e for e in _batching_errors(params))
    params = _batching_parameters()
    params.allowed_batch_sizes[:] = list(reversed(params.allowed_batch_sizes))
    assert any("increasing" in e for e in _batching_errors(params))


# --- monitoring.config ------------------------------------------------------------------------


def test_monitoring_config_enables_prometheus():
    config = _monitoring_config()
    assert config.prometheus_config.enable
    path = config.prometheus_config.path
    assert path.startswith("/monitoring/")
    assert f"localhost:8501{path}" in _read("monitoring.config")
    assert f"localhost:8501{path}" in _read("README.md")


# --- docker-compose.yml -----------------------------------------------------------------------


def _compose_default(value: str) -> str:
    """`${VAR:-default}` -> default (what Compose uses when VAR is unset)."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def _check_port(port: str) -> None:
    assert re.fullmatch(r"127\.0\.0\.1:\d+:\d+(/tcp)?", port), \
        f"{port!r} is not bound to 127.0.0.1"


def _check_image(image: str, gpu: bool) -> None:
    resolved = _compose_default(image)
    assert "latest" not in image, image
    assert re.fullmatch(r"tensorflow/serving:\d+\.\d+\.\d+" + ("-gpu" if gpu else ""),
                        resolved), image
    assert resolved == f"tensorflow/serving:{VERSION}" + ("-gpu" if gpu else "")


def test_compose_text_ports_and_images():
    """Line by line, without a YAML parser: every published port and every image."""
    text = _read("docker-compose.yml")
    body = [line.split("#", 1)[0] for line in text.splitlines()]
    ports = [m.group(1) for line in body
             for m in [re.match(r'\s*-\s*"?([0-9.:]+(?:/tcp)?)"?\s*$', line)] if m]
    assert len(ports) == 2, ports
    for port in ports:
        _check_port(port)
    assert {p.rsplit(":", 2)[1] for p in ports} == {"8500", "8501"}
    images = [m.group(1) for line in body
              for m in [re.match(r"\s*image:\s*(\S+)\s*$", line)] if m]
    assert len(images) == 2, images
    for image in images:
        _check_image(image, gpu=image.endswith("-gpu"))
    assert not re.search(r":latest|serving:\$\{[A-Z_]+:-latest\}", text)


def test_compose_structure():
    yaml = require("yaml")
    compose = yaml.safe_load(_read("docker-compose.yml"))  # resolves the `<<: *serving` merge
    services = compose["services"]
    assert set(services) == {"tf-serving-cpu", "tf-serving-gpu"}
    for name, service in services.items():
        for port in service["ports"]:
            _check_port(str(port))
        _check_image(service["image"], gpu=name.endswith("gpu"))
        mounts = {}
        for volume in service["volumes"]:
            source, target, mode = volume.rsplit(":", 2)
            assert mode == "ro", volume
            mounts[target] = source
        assert _compose_default(mounts["/models"]) == "../models"
        for file, target in CONFIG_FILES.items():
            assert mounts[target] == f"./{file}"
            assert os.path.exists(os.path.join(KIT, file))
        flags = dict(arg.split("=", 1) for arg in service["command"])
        assert flags["--model_config_file"] == CONFIG_FILES["models.config"]
        assert flags["--batching_parameters_file"] == _batching_file(name.endswith("gpu"))
        assert flags["--monitoring_config_file"] == CONFIG_FILES["monitoring.config"]
        assert flags["--enable_batching"] == "true"
        assert flags["--enable_model_warmup"] == "true"
    gpu = services["tf-serving-gpu"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"


# --- README.md --------------------------------------------------------------------------------


def _shell_commands(readme: str) -> list[list[str]]:
    """The commands of README's ```sh blocks, continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(words)
    return commands


def test_readme_docker_run_commands():
    readme = _read("README.md")
    runs = [c for c in _shell_commands(readme) if c[:2] == ["docker", "run"]]
    images = {}
    for command in runs:
        published = [command[i + 1] for i, word in enumerate(command) if word == "-p"]
        assert published, command
        for port in published:
            _check_port(port)
        image = next(w for w in command if w.startswith("tensorflow/serving"))
        gpu = "--gpus" in command
        _check_image(image, gpu)
        images[image] = command
        args = command[command.index(image) + 1:]
        flags = dict(arg.split("=", 1) for arg in args)
        assert flags == {"--model_config_file": CONFIG_FILES["models.config"],
                         "--enable_batching": "true",
                         "--batching_parameters_file": _batching_file(gpu),
                         "--monitoring_config_file": CONFIG_FILES["monitoring.config"],
                         "--enable_model_warmup": "true"}, args
        volumes = [command[i + 1] for i, word in enumerate(command) if word == "-v"]
        assert set(volumes) == {"$PWD/models:/models:ro", "$PWD/export:/config:ro"}
    assert set(images) == {f"tensorflow/serving:{VERSION}", f"tensorflow/serving:{VERSION}-gpu"}
    gpu_run = images[f"tensorflow/serving:{VERSION}-gpu"]
    assert gpu_run[gpu_run.index("--gpus") + 1] == "all"
    assert ":latest" not in readme and "serving:latest" not in readme
    assert re.search(r"\bnot been run here\b", readme)
    assert "test_runtime_matrix.py" in readme
    assert "## 2. Deploy with TensorFlow Serving 2.20" in readme
    assert ('curl -d \'{"instances": [{"text": "Call me Ishmael."}]}\' '
            "localhost:8501/v1/models/bert:predict") in readme


def test_readme_keras_bert_commands_parse():
    """Every `keras-bert ...` line of the README uses flags the CLI has."""
    from keras_bert.cli import build_parser

    parser = build_parser()
    commands = [c for c in _shell_commands(_read("README.md")) if c[0] == "keras-bert"]
    assert {c[1] for c in commands} >= {"export", "query", "serve", "audit"}
    assert ["keras-bert", "export", "MODEL_DIR", "models/bert"] in commands
    for command in commands:
        try:
            parser.parse_args(command[1:])
        except SystemExit:  # argparse's error exit
            pytest.fail(f"README command does not parse: {shlex.join(command)}")


def test_no_stale_loader_claim():
    """Exports are loaded through the Session (SavedModelBundle) path, not the object API."""
    readme = _read("README.md")
    assert not re.search(r"loads versions with `tf\.saved_model\.load`", readme)
    assert "Session" in readme and "SaverDef" in readme

