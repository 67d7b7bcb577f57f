"""In-tree PEP 517 build backend for the kvtopo Python package (standard library only).

`pip install .` calls build_wheel, which configures and builds the CMake target
`kvtopo_python` with Ninja (nothing is downloaded: pybind11, nlohmann-json, fmt, ... come from
the system, see the Makefile's `deps`) and zips <build>/python/kvtopo into a wheel.

The build tree defaults to build-wheel/<python tag> in the source tree, so repeated installs are
incremental; override it with the environment variable KVTOPO_WHEEL_BUILD_DIR or the config
setting `build-dir` (pip install . -C build-dir=/tmp/x). Parallelism: KVTOPO_WHEEL_JOBS or
`jobs` (default 2).
"""

import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

NAME = "kvtopo"
SUMMARY = "KV-cache topology planner and runtime for LLM serving under decode context parallelism"
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(\s*kvtopo\s+VERSION\s+([0-9.]+)", f.read())
    if not match:
        raise RuntimeError("kvtopo: no `project(kvtopo VERSION x.y.z)` in CMakeLists.txt")
    return match.group(1)


def _tag():
    impl = "cp" if sys.implementation.name == "cpython" else sys.implementation.name[:2]
    python = f"{impl}{sys.version_info[0]}{sys.version_info[1]}"
    abi = python + (getattr(sys, "abiflags", "") or "")
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return python, abi, platform


def _setting(config_settings, key, env, default):
    if config_settings and config_settings.get(key):
        return config_settings[key]
    return os.environ.get(env) or default


def _metadata():
    readme = ""
    try:
        with open(os.path.join(SOURCE_DIR, "README.md"), encoding="utf-8") as f:
            readme = f.read()
    except OSError:
        pass
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {_version()}",
        f"Summary: {SUMMARY}",
        "Requires-Python: >=3.8",
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(lines) + "\n\n" + readme


def _wheel_file():
    python, abi, platform = _tag()
    return (
        "Wheel-Version: 1.0\n"
        "Generator: kvtopo_build\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {python}-{abi}-{platform}\n"
    )


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _write_metadata_dir(directory):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(directory, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    with open(os.path.join(directory, "top_level.txt"), "w", encoding="utf-8") as f:
        f.write(NAME + "\n")


def _run(cmd):
    print("kvtopo_build:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _build_module(config_settings):
    python, _, _ = _tag()
    build_dir = os.path.abspath(
        _setting(config_settings, "build-dir", "KVTOPO_WHEEL_BUILD_DIR",
                 os.path.join(SOURCE_DIR, "build-wheel", python)))
    jobs = str(_setting(config_settings, "jobs", "KVTOPO_WHEEL_JOBS", "2"))
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("kvtopo: cmake not found; install cmake and ninja-build (make deps)")
    configure = [
        cmake, "-S", SOURCE_DIR, "-B", build_dir, "-G", "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DKVTOPO_BUILD_PYTHON=ON",
        "-DKVTOPO_BUILD_BENCH=OFF",
        f"-DPython_EXECUTABLE={sys.executable}",
    ]
    _run(configure)
    _run([cmake, "--build", build_dir, "--target", "kvtopo_python", "-j", jobs])
    package_dir = os.path.join(build_dir, "python", NAME)
    if not os.path.isfile(os.path.join(package_dir, "__init__.py")):
        raise RuntimeError(f"kvtopo: the build left no package in {package_dir}")
    return package_dir


def _record_entry(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


# ---- PEP 517 hooks ---------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _write_metadata_dir(os.path.join(metadata_directory, _dist_info()))
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package_dir = _build_module(config_settings)
    python, abi, platform = _tag()
    wheel_name = f"{NAME}-{_version()}-{python}-{abi}-{platform}.whl"
    files = []  # (arcname, bytes)
    for name in sorted(os.listdir(package_dir)):
        path = os.path.join(package_dir, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(".py") or (name.startswith("_kvtopo") and name.endswith(".so")):
            with open(path, "rb") as f:
                files.append((f"{NAME}/{name}", f.read()))
    if not any(arc.endswith(".so") for arc, _ in files):
        raise RuntimeError(f"kvtopo: no extension module in {package_dir}")
    dist_info = _dist_info()
    files.append((f"{dist_info}/METADATA", _metadata().encode()))
    files.append((f"{dist_info}/WHEEL", _wheel_file().encode()))
    files.append((f"{dist_info}/top_level.txt", (NAME + "\n").encode()))
    record = [_record_entry(arc, data) for arc, data in files]
    record.append(f"{dist_info}/RECORD,,")
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))

    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, wheel_name)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """The git-tracked files (or the tree minus build outputs) plus PKG-INFO."""
    base = f"{NAME}-{_version()}"
    try:
        out = subprocess.run(["git", "-C", SOURCE_DIR, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for root, dirs, filenames in os.walk(SOURCE_DIR):
            dirs[:] = [d for d in dirs if not (d.startswith("build") or d.startswith("."))
                       and d != "__pycache__"]
            for filename in filenames:
                names.append(os.path.relpath(os.path.join(root, filename), SOURCE_DIR))
    os.makedirs(sdist_directory, exist_ok=True)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(names):
            path = os.path.join(SOURCE_DIR, name)
            if os.path.isfile(path):
                tar.add(path, arcname=f"{base}/{name}", recursive=False)
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
    return filename
