"""The dashboard yb-master serves on its metrics port (issue 36 item 1): a page built into the
binary, fed by /dashboard.json, loaded in Debian's headless Chromium against a real cluster; its
tiles, charts and tables must show the cluster's real numbers. YB_DASHBOARD_SCREENSHOT=PATH keeps a
screenshot (docs/dashboard.png is one)."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import BIN, free_port, wait_until


def sampled(cluster):
    """Waits until the master has taken a sample of its history (one a second): reads made after it
    fall inside the window the page and `yb stats` rate them over."""
    wait_until(lambda: json.loads(cluster.http("/dashboard.json"))["history"], 10, "a dashboard sample")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(tmp_path, url, *args):
    """Runs headless Chromium on `url` (its scripts given 8 s of virtual time to fetch and draw)."""
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=8000",
                        *args, url], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def cell_texts(dom, table_id):
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install_deps.sh)")
def test_the_dashboard_shows_the_clusters_numbers(cluster, tmp_path):
    cluster.start_master()
    cluster.start_client("node-a", "16MB")
    for i in range(12):
        assert cluster.yb(["put", f"k{i}", "--value", "v" * 1000], check=True).returncode == 0
    sampled(cluster)
    for i in range(5):
        cluster.yb(["get", f"k{i}"], check=True)
    assert cluster.yb(["get", "never-written"]).returncode == 1
    time.sleep(3)  # samples after the reads too: the last minute's window holds every read

    feed = json.loads(cluster.http("/dashboard.json"))
    assert feed["now"]["keys"] == 12
    assert feed["now"]["get_hits"] >= 5 and feed["now"]["get_misses"] >= 1
    assert feed["misses"]["not_remembered"]["get"] >= 1
    assert len(feed["history"]) >= 2
    [seg] = feed["segments"]
    assert seg["name"].startswith("node-a:") and seg["capacity"] == 16 << 20

    url = f"http://{cluster.master_host}:{cluster.http_port}/dashboard"
    dom = chromium(tmp_path, url, "--dump-dom")
    assert 'data-loaded="yes"' in dom, dom[:3000]
    assert re.search(r'<div class="value" id="keys">12</div>', dom), re.search(r'id="keys">[^<]*', dom)
    hits, misses = feed["now"]["get_hits"], feed["now"]["get_misses"]
    rate = re.search(r'id="hit-rate">([^<]*)<', dom).group(1)
    assert rate == f"{100 * hits / (hits + misses):.1f}%", rate
    rows = cell_texts(dom, "segments-table")
    assert len(rows) == 1 and rows[0][0] == seg["name"], rows
    assert rows[0][3] == "16.0 MiB", rows
    used = feed["now"]["allocated"]
    assert used > 12 * 1000 and rows[0][4].endswith("KiB"), rows
    misses = {r[0]: r for r in cell_texts(dom, "misses-table")}
    assert int(misses["not_remembered"][1].replace(",", "")) >= 1
    # Each chart drew its series from the history.
    for chart in ("memory", "reads", "churn", "rpc"):
        svg = re.search(rf'<svg id="chart-{chart}".*?</svg>', dom, re.S).group(0)
        points = [int(n) for n in re.findall(r'data-points="(\d+)"', svg)]
        assert points and max(points) >= 2, (chart, svg[:500])
    assert '<span id="error"></span>' in dom, re.search(r'<span id="error">[^<]*', dom)

    # `/` is the same page; a screenshot renders.
    assert cluster.http("/").startswith("<!DOCTYPE html>")
    shot = os.environ.get("YB_DASHBOARD_SCREENSHOT") or str(tmp_path / "dashboard.png")
    chromium(tmp_path, url, f"--screenshot={shot}", "--window-size=1280,1000", "--hide-scrollbars")
    with open(shot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(shot) > 20000


def test_yb_stats_and_top_print_the_dashboards_numbers(cluster):
    cluster.start_master()
    cluster.start_client("node-a", "16MB")
    for i in range(3):
        cluster.yb(["put", f"k{i}", "--value", "v" * 100], check=True)
    sampled(cluster)
    cluster.yb(["get", "k0"], check=True)
    cluster.yb(["get", "gone"])
    time.sleep(2.5)  # a sample after the reads
    http = f"{cluster.master_host}:{cluster.http_port}"
    out = cluster.yb(["stats", "--http", http], check=True).stdout.decode()
    assert re.search(r"^keys +3 ", out, re.M), out
    assert re.search(r"^get hit rate +50\.0% last minute \(1 hits, 1 misses\)", out, re.M), out
    assert re.search(r"^not_remembered +1 +0 +0$", out, re.M), out
    [seg] = json.loads(cluster.http("/segments"))
    assert re.search(rf"^{re.escape(seg['name'])} +127\.0\.0\.1:\d+ +- +16\.0 MiB ", out, re.M), out
    feed = json.loads(cluster.yb(["stats", "--http", http, "--json"], check=True).stdout)
    assert feed["now"]["keys"] == 3
    top = cluster.yb(["top", "--http", http, "--interval", "0.2", "--iterations", "2"], check=True).stdout.decode()
    assert top.count("\x1b[H\x1b[2J") == 2 and top.count("get hit rate") == 2, top
    down = cluster.yb(["stats", "--http", f"127.0.0.1:{free_port()}"])
    assert down.returncode == 1 and b"cannot reach the master's HTTP at 127.0.0.1:" in down.stderr
    etcd = subprocess.run([f"{BIN}/yb", "--master", "etcd://127.0.0.1:1", "stats"], capture_output=True, timeout=30)
    assert etcd.returncode == 2 and b"--http HOST:PORT" in etcd.stderr


def test_a_segment_awaiting_its_owner_is_listed_with_when_it_is_dropped(cluster, tmp_path):
    """A node killed: until the master gives up on it (client_ttl, then the grace) its segment is
    not served and not on /segments, but the dashboard, its feed and `yb stats` list it, saying when
    it will be dropped."""
    cluster.start_master(extra=["--client_grace_sec", "30"])
    cluster.start_client("a", "16MB")
    cluster.start_client("b", "16MB")
    [seg_a] = [s for s in json.loads(cluster.http("/segments")) if s["name"].startswith("a:")]
    cluster.kill_client("a")

    def awaiting():
        return json.loads(cluster.http("/dashboard.json"))["awaiting"]

    wait_until(awaiting, cluster.client_ttl + 10, "the killed node's segment to await its owner")
    [a] = awaiting()
    assert a["name"] == seg_a["name"] and a["capacity"] == 16 << 20 and 0 < a["drops_in_ms"] <= 30000, a
    assert all(not s["name"].startswith("a:") for s in json.loads(cluster.http("/segments")))
    http = f"{cluster.master_host}:{cluster.http_port}"
    out = cluster.yb(["stats", "--http", http], check=True).stdout.decode()
    assert re.search(rf"^{re.escape(a['name'])} .* awaiting its owner, dropped in \d+ s$", out, re.M), out
    if CHROMIUM is not None:
        dom = chromium(tmp_path, f"http://{http}/dashboard", "--dump-dom")
        rows = {r[0]: r for r in cell_texts(dom, "segments-table")}
        assert rows[a["name"]][8].startswith("awaiting owner, dropped in "), rows
