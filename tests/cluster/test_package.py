"""The Python package installs like one (issue 32 item 5): `pip install ./python` into a fresh
virtualenv, offline, with the mooncake.store shim opted in; the caller replays then run from that
virtualenv, importing what pip installed (no PYTHONPATH), and the shim's names import."""
import os
import subprocess
import sys

import pytest

yuebing = pytest.importorskip("yuebing")

pytestmark = pytest.mark.plain_only  # the sanitizer builds leave it out (conftest.py)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_pip_installs_into_a_fresh_virtualenv_and_the_replays_run_from_it(tmp_path):
    # The build that made the package under test (the sanitizer builds use the plain build's): pip
    # reuses it, being configured for this same interpreter, instead of building the tree again.
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(yuebing.__file__))))
    assert os.path.exists(os.path.join(build, "CMakeCache.txt")), build
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    env = dict(os.environ, YB_BUILD_DIR=build)
    env.pop("PYTHONPATH", None)
    r = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-cache-dir", os.path.join(ROOT, "python"),
                        "--config-settings", "mooncake_shim=true"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    where = subprocess.run([python, "-c", "import yuebing, mooncake.store as s; print(yuebing.__file__); "
                                          "from mooncake.store import SoftPinAction, ReplicaDescriptor, BufferHandle; "
                                          "print(sorted(set(yuebing.__all__) - set(dir(s))))"],
                           env=env, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert where.returncode == 0, where.stderr
    installed, missing = where.stdout.split("\n")[:2]
    assert installed.startswith(str(venv)) and missing == "[]", where.stdout
    r = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(HERE, "test_callers.py"),
                        "-k", "lmcache or sglang or vllm"], env=env, cwd=HERE, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "4 passed" in r.stdout, r.stdout[-2000:]
