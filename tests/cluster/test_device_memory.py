"""Device memory (issue 32): device_cases.py run in a process that finds the fake CUDA driver
(tests/fake_cuda) first, so that every caller replay and every address-taking call runs with its
buffers in memory the CPU cannot touch. The client loads the driver once per process, which is why
the cases run in a process of their own."""
import os
import subprocess
import sys

from fake_cuda import FAKE_DIR, fake_cuda_env

HERE = os.path.dirname(os.path.abspath(__file__))


def test_caller_replays_and_calls_with_buffers_in_fake_device_memory():
    assert os.path.exists(os.path.join(FAKE_DIR, "libcuda.so.1")), f"the fake driver is not built in {FAKE_DIR}"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
                        os.path.join(HERE, "device_cases.py")],
                       cwd=HERE, env=fake_cuda_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-2000:]
