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

from conftest import wait_until

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
    for i in range(5):
        cluster.yb(["get", f"k{i}"], check=True)
    assert cluster.yb(["get", "never-written"]).returncode == 1
    time.sleep(3)  # three samples of history at least (one a second)

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
