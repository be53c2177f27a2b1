"""The Python package's PEP 517 build backend: builds `_yuebing` with the repository's CMake for the
interpreter running the build, and writes the wheel itself (a zip with the package, the extension
and its dist-info), so that pip needs nothing from the network and no setuptools or wheel package.

Config setting `mooncake_shim` (pip --config-settings mooncake_shim=true): also package the `mooncake.store` shim.
Environment: YB_BUILD_DIR, a CMake build of the repository configured for the same interpreter
(else build-pip/<interpreter>/ is configured and built)."""
import base64
import glob
import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAME, VERSION = "yuebing", "0.1.0"
SUMMARY = "Yuebing: a distributed KV-cache store for LLM inference, with Mooncake's Python interface"


def _interpreter():
    """The interpreter whose ABI the extension must have: a virtualenv's base interpreter."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _cached_python(build):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("Python_EXECUTABLE:"):
                return os.path.realpath(line.split("=", 1)[1].strip())
    return None


def _build_extension():
    python = _interpreter()
    tag = f"{sys.implementation.cache_tag}-{hashlib.sha1(python.encode()).hexdigest()[:8]}"
    build = os.environ.get("YB_BUILD_DIR") or os.path.join(ROOT, "build-pip", tag)
    if os.path.exists(os.path.join(build, "CMakeCache.txt")):
        if _cached_python(build) != python:
            raise RuntimeError(f"{build} builds the extension for {_cached_python(build)}, not for {python} (the "
                               "interpreter running pip): unset YB_BUILD_DIR or point it at a build for this one")
    else:
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                               "-DYB_BUILD_TESTS=OFF", "-DYB_BUILD_BENCH=OFF", f"-DPython_EXECUTABLE={python}"],
                              stdout=sys.stderr)
    subprocess.check_call(["cmake", "--build", build, "--target", "_yuebing"], stdout=sys.stderr)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = os.path.join(build, "python", "yuebing", "_yuebing" + suffix)
    if not os.path.exists(built):
        raise RuntimeError(f"{built} was not built (found {glob.glob(os.path.join(build, 'python', 'yuebing', '*.so'))})")
    return built


def _wheel_tag():
    interp = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{interp}-{interp}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"


def _shim_wanted(config_settings):
    value = str((config_settings or {}).get("mooncake_shim", "")).lower()
    return value in ("1", "true", "yes", "on")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.9\n").encode()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for py in sorted(glob.glob(os.path.join(HERE, "yuebing", "*.py"))):
        with open(py, "rb") as f:
            files[f"yuebing/{os.path.basename(py)}"] = f.read()
    built = _build_extension()
    with open(built, "rb") as f:
        files[f"yuebing/{os.path.basename(built)}"] = f.read()
    if _shim_wanted(config_settings):
        for py in sorted(glob.glob(os.path.join(HERE, "shim", "mooncake", "*.py"))):
            with open(py, "rb") as f:
                files[f"mooncake/{os.path.basename(py)}"] = f.read()
    tag = _wheel_tag()
    info = f"{NAME}-{VERSION}.dist-info"
    files[f"{info}/METADATA"] = _metadata()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: yuebing build_backend\nRoot-Is-Purelib: false\n"
                              f"Tag: {tag}\n").encode()
    files[f"{info}/top_level.txt"] = ("yuebing\n" + ("mooncake\n" if _shim_wanted(config_settings) else "")).encode()
    record = [_record_line(path, data) for path, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{NAME}-{VERSION}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, f"{NAME}-{VERSION}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "wb") as f:
        f.write(_metadata())
    return os.path.basename(info)
