"""Builds a wheelhouse of keras-bert-tf for a machine that has TensorFlow but no internet
(a Kaggle notebook): attach the folder as a dataset, then install offline, keeping the
image's TensorFlow:

    python scripts/kaggle_wheelhouse.py --tensorflow 2.18.0 --out wheelhouse
    # on Kaggle, with the folder attached as a dataset:
    pip install --no-index --find-links /kaggle/input/<dataset> keras-bert-tf

Pass the TensorFlow version of the target image (on Kaggle: `import tensorflow as tf;
tf.__version__`). The script

1. builds this repository's wheel (`pip wheel --no-deps .`);
2. resolves the package's dependencies for the target (Linux x86_64, CPython
   `--python-version`, binary wheels only) with that TensorFlow pinned and TF Text
   pinned to its minor version (`pip install --dry-run --report`: nothing is installed;
   pip reads each wheel's metadata; tensorflow-serving-api, the `serving` extra that the
   development server and the gRPC client need, is left out: a notebook loads its exports
   with TensorFlow);
3. downloads (`pip download --no-deps`) every resolved package except TensorFlow and the
   packages TensorFlow itself requires, directly or not (Keras, NumPy, protobuf, h5py,
   grpcio, ...: an image with that TensorFlow has them), but keeps the packages named by
   `--keep` (default `keras`: setup.cfg needs Keras >= 3.9, which TensorFlow before 2.20
   does not guarantee; pip installs the wheel only where the image's Keras is older);
4. writes `README.txt` (the TensorFlow it was built for, the install command, the wheels)
   and `requirements.txt` into the folder.

The wheelhouse holds no TensorFlow wheel, so `pip install --no-index` cannot replace the
image's TensorFlow: where the installed one does not fit (another TF Text pin, a release
outside setup.cfg's range) pip stops with `No matching distribution found for tensorflow...`
before installing anything.
pip evaluates environment markers (`; sys_platform == ...`) for the host, not the target:
build on Linux (or in a Kaggle notebook with internet on) for an exact Linux wheelhouse.
Needs pip >= 22.2 (`--report`) on the host; tested with pip 23.2.1. Where the index serves
wheel metadata files (PEP 658; PyPI does, the mirror here does not) pip can read
TensorFlow's dependencies from them; otherwise it downloads TensorFlow's wheel (about
600 MB) to read them, into its cache, not into the wheelhouse.
"""

from __future__ import annotations

import argparse
import configparser
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # pip's own copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import Version

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# manylinux2014 = glibc 2.17; some current wheels (contourpy 1.3.3, Pillow 13) are tagged
# only for glibc 2.27/2.28. pip (23.2) does not widen a --platform to older tags, so each is
# named: wheels for glibc 2.17 to 2.28 (Debian 10, Ubuntu 18.10, RHEL 8 and later).
DEFAULT_PLATFORMS = ["manylinux2014_x86_64", *(f"manylinux_2_{n}_x86_64" for n in range(17, 29))]
DEFAULT_KEEP = ["keras"]


def _distribution_name() -> str:
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"), encoding="utf-8")
    return config["metadata"]["name"]


def _tensorflow_range() -> str:
    """setup.cfg's specifier for tensorflow, e.g. `>=2.16,<2.22`."""
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"), encoding="utf-8")
    for line in config["options"]["install_requires"].splitlines():
        if line.strip() and Requirement(line).name == "tensorflow":
            return str(Requirement(line).specifier)
    raise SystemExit("setup.cfg names no tensorflow requirement")


def _marker_environment(python_version: str) -> dict[str, str]:
    """PEP 508 marker values of the target: Linux x86_64, CPython `python_version`."""
    return {"python_version": python_version, "python_full_version": python_version + ".0",
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "platform_machine": "x86_64", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "platform_release": "",
            "platform_version": "", "implementation_version": python_version + ".0",
            "extra": ""}


def provided_by_tensorflow(report: dict, python_version: str) -> set[str]:
    """`tensorflow` and every package of the pip report that it requires, transitively, on
    the target (extras and markers that do not hold there are not followed)."""
    requires = {}
    for item in report["install"]:
        metadata = item["metadata"]
        requires[canonicalize_name(metadata["name"])] = metadata.get("requires_dist") or []
    environment = _marker_environment(python_version)
    found, todo = set(), ["tensorflow"]
    while todo:
        name = todo.pop()
        if name in found or name not in requires:
            continue
        found.add(name)
        for line in requires[name]:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate(environment):
                todo.append(canonicalize_name(requirement.name))
    return found


CLIENT = "keras-bert-client"  # client/: built here too, it is not on the package index


def _clean_source(temp: str, project: str, files: tuple[str, ...], package: str) -> str:
    """A copy of what a wheel is built from, so that a checkout's `build/` (stale files
    of earlier builds) neither enters the wheel nor is written to."""
    source = os.path.join(temp, "src-" + package)
    os.makedirs(source)
    for name in files:
        shutil.copy2(os.path.join(project, name), source)
    shutil.copytree(os.path.join(project, package), os.path.join(source, package),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return source


def _pip(*arguments: str, quiet: bool = True) -> None:
    command = [sys.executable, "-m", "pip", *arguments, "--disable-pip-version-check"]
    if quiet:
        command.append("-q")
    subprocess.run(command, check=True)


def _target_options(args) -> list[str]:
    options = ["--only-binary=:all:", "--python-version", args.python_version,
               "--implementation", "cp"]
    for platform in args.platform or DEFAULT_PLATFORMS:
        options += ["--platform", platform]
    return options


def _readme(name: str, version: str, args, wheels: list[str], dropped: list[str]) -> str:
    return "\n".join([
        f"{name} {version} for TensorFlow {args.tensorflow} "
        f"(Linux x86_64, CPython {args.python_version})",
        "",
        "Attach this folder as a Kaggle dataset, then install without internet; the",
        "image's TensorFlow is kept (pip installs only what the image lacks or has too old):",
        "",
        f"    pip install --no-index --find-links /kaggle/input/<dataset> {name}",
        "",
        "(in a notebook cell: !pip install ...; <dataset> is the folder holding these files).",
        "",
        f"Built by: python scripts/kaggle_wheelhouse.py --tensorflow {args.tensorflow} "
        f"--python-version {args.python_version}",
        "It holds no TensorFlow wheel, so the install cannot replace the image's TensorFlow;",
        "on an image with another TensorFlow, build one for that version.",
        "",
        "Wheels:",
        *(f"    {wheel}" for wheel in wheels),
        "",
        "Left to the image (TensorFlow and what it requires):",
        "    " + " ".join(dropped),
        "",
    ])


def build(args) -> str:
    name = _distribution_name()
    tensorflow = Version(args.tensorflow)
    supported = _tensorflow_range()
    if not Requirement(f"tensorflow{supported}").specifier.contains(tensorflow):
        raise SystemExit(f"{name} supports tensorflow{supported}, not {args.tensorflow}")
    minor = f"{tensorflow.major}.{tensorflow.minor}"
    out = os.path.abspath(args.out)
    if os.path.isdir(out) and os.listdir(out):
        raise SystemExit(f"{out} is not empty")
    os.makedirs(out, exist_ok=True)

    with tempfile.TemporaryDirectory() as temp:
        print(f"[wheelhouse] {name} wheel")
        _pip("wheel", "--no-deps", "--wheel-dir", out, _clean_source(
            temp, REPO, ("pyproject.toml", "setup.cfg", "README.md"), "keras_bert"))
        _pip("wheel", "--no-deps", "--wheel-dir", out, _clean_source(
            temp, os.path.join(REPO, "client"), ("pyproject.toml", "README.md"),
            "keras_bert_client"))
        [package] = glob.glob(os.path.join(out, "keras_bert_tf-*.whl"))
        constraints = os.path.join(temp, "constraints.txt")
        with open(constraints, "w", encoding="utf-8") as f:
            f.write(f"tensorflow=={args.tensorflow}\ntensorflow-text=={minor}.*\n")
        print(f"[wheelhouse] resolving for tensorflow=={args.tensorflow}, Python "
              f"{args.python_version}, Linux x86_64")
        report_path = os.path.join(temp, "report.json")
        _pip("install", "--dry-run", "--ignore-installed", "--target", os.path.join(temp, "t"),
             "--report", report_path, *_target_options(args), "-c", constraints,
             "--find-links", out, package)
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
    resolved = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
                for item in report["install"]}
    keep = {canonicalize_name(n) for n in args.keep}
    built = {canonicalize_name(name), CLIENT}
    dropped = provided_by_tensorflow(report, args.python_version) - keep - built
    dropped.add("tensorflow")
    wanted = sorted(n for n in resolved if n not in dropped and n not in built)
    if not resolved.get("tensorflow-text", "").startswith(minor + "."):
        raise SystemExit(f"resolved tensorflow-text {resolved.get('tensorflow-text')}, not "
                         f"{minor}.*")
    print(f"[wheelhouse] downloading {len(wanted)} wheels: "
          + ", ".join(f"{n}=={resolved[n]}" for n in wanted))
    _pip("download", "--no-deps", "--dest", out, *_target_options(args),
         *(f"{n}=={resolved[n]}" for n in wanted))

    wheels = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "*.whl")))
    version = resolved[canonicalize_name(name)]
    with open(os.path.join(out, "README.txt"), "w", encoding="utf-8") as f:
        f.write(_readme(name, version, args, wheels, sorted(dropped)))
    with open(os.path.join(out, "requirements.txt"), "w", encoding="utf-8") as f:
        f.write(f"# for TensorFlow {args.tensorflow}: pip install --no-index --find-links "
                f"<this folder> -r requirements.txt\n{name}=={version}\n")
    print(f"[wheelhouse] {out}: {len(wheels)} wheels for tensorflow {args.tensorflow}; install "
          f"with: pip install --no-index --find-links /kaggle/input/<dataset> {name}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Builds a wheelhouse of keras-bert-tf (this checkout) and its dependencies "
                    "but TensorFlow's, for `pip install --no-index --find-links DIR "
                    "keras-bert-tf` next to a preinstalled TensorFlow (Kaggle without internet).")
    parser.add_argument("--tensorflow", required=True, metavar="VERSION",
                        help="the target image's TensorFlow version, e.g. 2.18.0")
    parser.add_argument("--out", default="wheelhouse", help="output folder (new or empty)")
    parser.add_argument("--python-version", default="3.11",
                        help="the target's Python, major.minor (default 3.11; check the "
                             "image's `python --version`)")
    parser.add_argument("--platform", action="append", metavar="TAG",
                        help="wheel platform tag, repeatable (default: manylinux2014_x86_64 "
                             "and manylinux_2_17 .. 2_28_x86_64)")
    parser.add_argument("--keep", nargs="*", default=DEFAULT_KEEP, metavar="NAME",
                        help="requirements of TensorFlow to ship anyway (default: keras); "
                             "`--keep` alone ships none")
    build(parser.parse_args(argv))


if __name__ == "__main__":
    main()
