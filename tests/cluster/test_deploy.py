"""What deploy/ ships, checked as far as this machine can: the systemd units as systemd reads them
(systemd-analyze verify), and the flags their env files give, by starting the daemons with them."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN, free_port, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def installed(tmp_path):
    """scripts/install_systemd.sh into a root of the test's own (DESTDIR)."""
    root = tmp_path / "root"
    r = subprocess.run([os.path.join(ROOT, "scripts", "install_systemd.sh"), os.path.dirname(BIN)],
                       env=dict(os.environ, DESTDIR=str(root)), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return root


def env_flags(root, name, var):
    text = (root / "etc" / "yuebing" / name).read_text()
    m = re.search(rf"^{var}=(.*)$", text, re.M)
    assert m, text
    return m.group(1).split()


def test_the_units_are_what_systemd_accepts(installed, tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (scripts/install_deps.sh installs systemd)")
    for b in ("yb-master", "yb-client", "yb"):
        assert os.access(installed / "usr/local/bin" / b, os.X_OK)
    # systemd checks that ExecStart's program exists on this machine: point it at the installed copy.
    units = tmp_path / "units"
    units.mkdir()
    for u in ("yb-master.service", "yb-client.service"):
        text = (installed / "etc/systemd/system" / u).read_text()
        assert "Restart=always" in text and "StateDirectory=yuebing/" in text
        (units / u).write_text(text.replace("/usr/local/bin/", f"{installed}/usr/local/bin/"))
    r = subprocess.run(["systemd-analyze", "verify"] + [str(units / u) for u in os.listdir(units)],
                       capture_output=True, text=True)
    # Any complaint (an unknown key, a bad value) fails, not only an error.
    out = "\n".join(line for line in (r.stdout + r.stderr).splitlines() if "yb-" in line)
    assert r.returncode == 0 and not out, r.stdout + r.stderr


def test_the_env_files_flags_start_a_working_pool(installed, tmp_path):
    """The flags master.env and client.env ship (their ports moved to free ones) start a master and
    a node that mounts on it, from the service's working directory as the unit sets it."""
    rpc, http, port, chttp = free_port(), free_port(), free_port(), free_port()
    sub = {"50051": str(rpc), "9003": str(http), "50052": str(port), "9004": str(chttp), "4GB": "64MB"}
    fix = lambda flags: [sub.get(f, f.replace("50051", str(rpc))) for f in flags]  # noqa: E731
    work = tmp_path / "var-lib-yuebing"
    (work / "master").mkdir(parents=True)
    (work / "client").mkdir()
    procs = []
    try:
        procs.append(subprocess.Popen([str(installed / "usr/local/bin/yb-master")]
                                      + fix(env_flags(installed, "master.env", "YB_MASTER_FLAGS")),
                                      cwd=work / "master", stdout=open(tmp_path / "master.log", "wb"),
                                      stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen([str(installed / "usr/local/bin/yb-client"), "--prefault", "false"]
                                      + fix(env_flags(installed, "client.env", "YB_CLIENT_FLAGS")),
                                      cwd=work / "client", stdout=open(tmp_path / "client.log", "wb"),
                                      stderr=subprocess.STDOUT))
        yb = [str(installed / "usr/local/bin/yb"), "--master", f"127.0.0.1:{rpc}"]

        def mounted():
            r = subprocess.run(yb + ["segments"], capture_output=True, text=True)
            return r.returncode == 0 and len(r.stdout.splitlines()) > 1

        wait_until(mounted, 15, "the node to mount on the master")
        assert subprocess.run(yb + ["put", "k", "--value", "v"], capture_output=True).returncode == 0
        assert subprocess.run(yb + ["get", "k"], capture_output=True).stdout == b"v"
        assert (work / "master" / "yb-master.data").is_dir()  # the index under the state directory
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
