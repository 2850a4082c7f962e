"""What `python -m build` makes of this checkout: each wheel (built from the sdist, and
straight from the source tree as `pip install .` builds it) and sdist holds every file git
tracks in its package (the embedded corpus, vocabularies and op lists included), and the two
distributions' metadata requires what they say: the package its own release of the client,
the client no TensorFlow."""

from __future__ import annotations

import ast
import configparser
import email
import fnmatch
import os
import re
import tarfile
import zipfile

import pytest

from tests.support.built_distributions import PROJECTS, REPO, built_distributions, tracked_files

PACKAGES = {"keras-bert-tf": "keras_bert", "keras-bert-client": "keras_bert_client"}

# The distributions are built once per content of the sources (four builds: ~8 s on a busy
# 2-core Zen 4, every time a file changes), so the tests that read them are slow; the README's
# tier keeps `test_the_build_settings_ship_every_tracked_file_and_require_the_client`, which
# reads from the same settings what the builds are told to ship and require.


def _version(init: str) -> str:
    with open(init, encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M).group(1)


def _undeclared(project: str, package: str, data_patterns: list[str]) -> list[str]:
    """The files git tracks in `package` that its build settings do not ship: Python files
    outside a package `find` includes (a folder with `__init__.py` up to `package`), other
    files no `package_data` pattern matches."""
    missed = []
    for name in tracked_files(project):
        if not name.startswith(package + "/"):
            continue
        folder = os.path.dirname(name)
        if name.endswith(".py"):
            parts = folder.split("/")
            folders = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
            if all(os.path.isfile(os.path.join(project, f, "__init__.py")) for f in folders):
                continue
        elif any(fnmatch.fnmatch(name.removeprefix(package + "/"), p) for p in data_patterns):
            continue
        missed.append(name)
    return missed


def test_the_build_settings_ship_every_tracked_file_and_require_the_client():
    """What setup.cfg and client/pyproject.toml tell setuptools, read in place of a build: the
    files the slow tests below find in the built distributions, the package's requirement of
    its own release of the client, the client's of no TensorFlow, the entry points."""
    settings = configparser.ConfigParser()
    settings.read(os.path.join(REPO, "setup.cfg"), encoding="utf-8")
    options = settings["options"]
    assert options["packages"] == "find:" and options["include_package_data"] == "True"
    assert settings["options.packages.find"]["include"] == "keras_bert, keras_bert.*"
    data = settings["options.package_data"]["keras_bert"].split()
    assert len(tracked_files(REPO)) > 5
    assert _undeclared(REPO, "keras_bert", data) == []
    client_dir = PROJECTS["keras-bert-client"]
    assert _undeclared(client_dir, "keras_bert_client", []) == []

    client_version = _version(os.path.join(client_dir, "keras_bert_client", "__init__.py"))
    assert _version(os.path.join(REPO, "keras_bert", "__init__.py")) == client_version
    assert f"keras-bert-client=={client_version}" in options["install_requires"].split("\n")
    assert settings["metadata"]["version"] == "attr: keras_bert.__version__"
    assert settings["options.extras_require"]["serving"].strip().startswith(
        "tensorflow-serving-api")
    assert "keras-bert = keras_bert.cli:main" in settings["options.entry_points"][
        "console_scripts"]
    with open(os.path.join(client_dir, "pyproject.toml"), encoding="utf-8") as f:
        client = f.read()
    dependencies = ast.literal_eval(re.search(r"^dependencies = (\[.*\])$", client,
                                              re.M).group(1))
    assert dependencies and not [r for r in dependencies
                                 if r.startswith(("tensorflow", "protobuf", "keras"))]
    assert 'include = ["keras_bert_client", "keras_bert_client.*"]' in client
    assert 'version = {attr = "keras_bert_client.__version__"}' in client
    assert 'keras-bert-query = "keras_bert_client.query:main"' in client


@pytest.fixture(scope="module")
def built():
    return built_distributions()


def _metadata(wheel: str) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", PROJECTS)
def test_wheel_and_sdist_hold_every_tracked_package_file(built, name):
    package = PACKAGES[name]
    tracked = [f for f in tracked_files(PROJECTS[name]) if f.startswith(package + "/")]
    assert len(tracked) > 5
    for wheel in (built[name].wheel, built[name].direct_wheel):
        with zipfile.ZipFile(wheel) as archive:
            in_wheel = set(archive.namelist())
        assert not [f for f in tracked if f not in in_wheel], wheel
        assert not [f for f in in_wheel if f.startswith(package + "/") and f not in tracked]
    with tarfile.open(built[name].sdist) as archive:
        root = archive.getnames()[0].split("/")[0]
        in_sdist = {n.removeprefix(root + "/") for n in archive.getnames()}
    assert not [f for f in tracked if f not in in_sdist]
    assert {"pyproject.toml", "README.md"} <= in_sdist


@pytest.mark.slow
def test_the_embedded_data_is_in_the_wheel(built):
    with zipfile.ZipFile(built["keras-bert-tf"].wheel) as archive:
        names = archive.namelist()
    for folder in ("keras_bert/data/corpus/", "keras_bert/data/vocab/",
                   "keras_bert/export/oplists/"):
        assert any(n.startswith(folder) and n.endswith(".txt") for n in names), folder


@pytest.mark.slow
def test_metadata_requires_the_clients_own_release_and_no_tensorflow_for_it(built):
    package, client = (_metadata(built[n].wheel) for n in ("keras-bert-tf",
                                                             "keras-bert-client"))
    assert package["Version"] == client["Version"]
    requires = package.get_all("Requires-Dist")
    assert f"keras-bert-client=={client['Version']}" in requires
    assert any(r.startswith("tensorflow-serving-api") and "extra == \"serving\"" in r
               for r in requires)
    client_requires = client.get_all("Requires-Dist")
    assert not [r for r in client_requires if r.split()[0].startswith(("tensorflow",
                                                                        "protobuf", "keras"))]
    entry_points = {}
    for name in ("keras-bert-tf", "keras-bert-client"):
        with zipfile.ZipFile(built[name].wheel) as archive:
            [path] = [n for n in archive.namelist() if n.endswith("entry_points.txt")]
            entry_points[name] = archive.read(path).decode()
    assert "keras-bert = keras_bert.cli:main" in entry_points["keras-bert-tf"]
    assert "keras-bert-query = keras_bert_client.query:main" in entry_points["keras-bert-client"]
