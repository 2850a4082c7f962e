"""What `python -m build` makes of this checkout: each wheel (built from the sdist, and
straight from the source tree as `pip install .` builds it) and sdist holds every file git
tracks in its package (the embedded corpus, vocabularies and op lists included), and the two
distributions' metadata requires what they say: the package its own release of the client,
the client no TensorFlow."""

from __future__ import annotations

import email
import tarfile
import zipfile

import pytest

from tests.support.built_distributions import PROJECTS, built_distributions, tracked_files

PACKAGES = {"keras-bert-tf": "keras_bert", "keras-bert-client": "keras_bert_client"}


@pytest.fixture(scope="module")
def built():
    return built_distributions()


def _metadata(wheel: str) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


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


def test_the_embedded_data_is_in_the_wheel(built):
    with zipfile.ZipFile(built["keras-bert-tf"].wheel) as archive:
        names = archive.namelist()
    for folder in ("keras_bert/data/corpus/", "keras_bert/data/vocab/",
                   "keras_bert/export/oplists/"):
        assert any(n.startswith(folder) and n.endswith(".txt") for n in names), folder


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
