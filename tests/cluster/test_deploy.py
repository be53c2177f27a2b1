"""What deploy/ ships, checked as far as this machine can: the systemd units as systemd reads them
(systemd-analyze verify), and the flags their env files give, by starting the daemons with them;
the container image's package list against what the binaries load, and the Kubernetes manifests
against the API's types (python3-kubernetes) and our flags."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN, free_port, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.plain_only  # the sanitizer builds leave it out (conftest.py)


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


# ---------------------------------------------------------------------------------------------
# The container image and the Kubernetes manifests: no image can be built here (no container
# runtime, no registry), so the checks are what holds without one.

CONTAINERFILE = os.path.join(ROOT, "deploy", "container", "Containerfile")
MANIFESTS = os.path.join(ROOT, "deploy", "kubernetes")
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6"}  # in every Debian image
# The sanitizers' runtimes, which a sanitizer build of the tests loads and the image's release build does not.
SANITIZER_RUNTIMES = {"libasan8", "libubsan1", "libtsan2", "liblsan0"}


def containerfile_stages():
    """[(base image, [(instruction, argument)])], continuation lines joined."""
    text = open(CONTAINERFILE).read().replace("\\\n", " ")
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, arg = line.partition(" ")
        instr = instr.upper()
        assert instr in {"FROM", "RUN", "COPY", "WORKDIR", "USER", "EXPOSE", "ENTRYPOINT", "CMD", "ENV", "ARG",
                         "LABEL"}, line
        if instr == "FROM":
            stages.append((arg.split()[0], []))
        else:
            assert stages, "an instruction before FROM"
            stages[-1][1].append((instr, arg.strip()))
    return stages


def test_the_container_image_installs_every_library_the_binaries_load():
    stages = containerfile_stages()
    assert [s[0] for s in stages] == ["debian:12", "debian:12-slim"]
    run = " ".join(a for i, a in stages[1][1] if i == "RUN")
    m = re.search(r"apt-get install -y --no-install-recommends (.*?)&&", run)
    assert m, run
    installed = set(m.group(1).split())
    loaded = {}  # each library's path as ldd found it, with and without /usr (merged /usr)
    for b in ("yb-master", "yb-client", "yb"):
        out = subprocess.run(["ldd", os.path.join(BIN, b)], capture_output=True, text=True, check=True).stdout
        for path in re.findall(r"^\s*\S+ => (/\S+)", out, re.M):
            other = path[len("/usr"):] if path.startswith("/usr/") else "/usr" + path
            loaded[path] = (b, {path, other})
    # One dpkg query for them all, by exact path (a pattern with a wildcard is matched against
    # every installed file: 53 s for these on a cold cache here).
    paths = sorted(set().union(*(v for _, v in loaded.values())))
    owners = subprocess.run(["dpkg", "-S"] + paths, capture_output=True, text=True).stdout.splitlines()
    owner_of = {}
    for line in owners:
        pkgs, _, file = line.partition(": ")
        for pkg in pkgs.split(", "):
            owner_of.setdefault(file, set()).add(pkg.split(":")[0])
    needed = set()
    for path, (b, names) in loaded.items():
        pkgs = set().union(*(owner_of.get(n, set()) for n in names))
        assert pkgs, f"{b} loads {path}, which no Debian package here owns"
        needed |= pkgs
    missing = needed - installed - BASE_PACKAGES - SANITIZER_RUNTIMES
    assert not missing, f"the image lacks {sorted(missing)}, which the binaries load"
    assert "etcd-server" in installed
    if shutil.which("apt-cache"):
        # One query for them all (apt-cache loads its cache each time: 0.75 s a call here).
        known = subprocess.run(["apt-cache", "show", "--no-all-versions"] + sorted(installed), capture_output=True,
                               text=True).stdout
        unknown = installed - set(re.findall(r"^Package: (\S+)$", known, re.M))
        assert not unknown, f"the image installs {sorted(unknown)}, which Debian's archive here does not have"
    # The build stage uses the project's own setup script and builds what the run stage copies.
    build = " ".join(a for i, a in stages[0][1] if i == "RUN")
    assert "scripts/install_deps.sh" in build
    for b in ("yb-master", "yb-client", "yb"):
        assert f"build/bin/{b}" in build
    assert ("USER", "yuebing") in stages[1][1]


def manifests():
    yaml = pytest.importorskip("yaml")
    docs = []
    for name in sorted(os.listdir(MANIFESTS)):
        with open(os.path.join(MANIFESTS, name)) as f:
            docs += [(name, d) for d in yaml.safe_load_all(f) if d]
    return docs


def check_model(value, type_name, path, models):
    """`value` against the Kubernetes API type `type_name` as python3-kubernetes defines it:
    no field the type does not have, each of the type it declares."""
    if type_name.startswith("list["):
        assert isinstance(value, list), f"{path}: a list expected"
        for i, v in enumerate(value):
            check_model(v, type_name[5:-1], f"{path}[{i}]", models)
        return
    if type_name.startswith("dict("):
        assert isinstance(value, dict), f"{path}: a map expected"
        inner = type_name[5:-1].split(", ", 1)[1]
        for k, v in value.items():
            check_model(v, inner, f"{path}.{k}", models)
        return
    simple = {"str": str, "int": int, "bool": bool, "float": (int, float), "object": object, "datetime": str}
    if type_name in simple:
        if type_name == "str":  # quantities and int-or-string ports are declared str
            assert isinstance(value, (str, int)), f"{path}: a string expected, not {value!r}"
        else:
            assert isinstance(value, simple[type_name]), f"{path}: {type_name} expected, not {value!r}"
        return
    cls = getattr(models, type_name)
    assert isinstance(value, dict), f"{path}: an object ({type_name}) expected"
    by_json = {j: py for py, j in cls.attribute_map.items()}
    for k, v in value.items():
        assert k in by_json, f"{path}: {type_name} has no field '{k}'"
        check_model(v, cls.openapi_types[by_json[k]], f"{path}.{k}", models)


def test_the_kubernetes_manifests_match_the_api_and_our_flags():
    """Each document against its kind's API type (python3-kubernetes' models: unknown fields, wrong
    types and missing required ones are errors); every flag given to one of our binaries is one it
    accepts; services select pods that exist; mounts name volumes that exist."""
    k8s = pytest.importorskip("kubernetes")
    models = k8s.client
    api = k8s.client.ApiClient()
    docs = manifests()
    kinds = {(d["kind"], d["metadata"]["name"]) for _, d in docs}
    assert {("StatefulSet", "yb-master"), ("DaemonSet", "yb-client"), ("StatefulSet", "yb-etcd"),
            ("Service", "yb-master"), ("Service", "yb-etcd")} <= kinds
    helps = {b: subprocess.run([os.path.join(BIN, b), "--help"], capture_output=True, text=True).stdout
             for b in ("yb-master", "yb-client")}
    pod_labels = []
    for name, d in docs:
        type_name = f"V1{d['kind']}"
        assert d["apiVersion"] in ("v1", "apps/v1"), (name, d["apiVersion"])
        check_model(d, type_name, f"{name}:{d['kind']}", models)
        api._ApiClient__deserialize(d, type_name)  # required fields, as the API client checks them
        if d["kind"] in ("StatefulSet", "DaemonSet"):
            spec = d["spec"]
            labels = spec["template"]["metadata"]["labels"]
            assert spec["selector"]["matchLabels"].items() <= labels.items(), name
            pod_labels.append(labels)
            pod = spec["template"]["spec"]
            volumes = {v["name"] for v in pod.get("volumes", [])}
            volumes |= {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])}
            for c in pod["containers"]:
                for m in c.get("volumeMounts", []):
                    assert m["name"] in volumes, f"{name}: {c['name']} mounts '{m['name']}', which is not defined"
                env = {e["name"] for e in c.get("env", [])}
                for a in c.get("args", []):
                    for ref in re.findall(r"\$\((\w+)\)", a):
                        assert ref in env, f"{name}: {a} refers to ${ref}, not in the container's env"
                binary = os.path.basename(c["command"][0])
                if binary in helps:
                    for a in c["args"]:
                        flag = a.split("=", 1)[0]
                        assert re.search(rf"^\s+{re.escape(flag)}\b", helps[binary], re.M), \
                            f"{name}: {binary} has no flag {flag}"
    for name, d in docs:
        if d["kind"] == "Service":
            sel = d["spec"]["selector"]
            assert any(sel.items() <= labels.items() for labels in pod_labels), f"{name}: selects no pod"
