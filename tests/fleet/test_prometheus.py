"""`--format prometheus` read by Debian's real prometheus-node-exporter through its textfile collector,
scraped over HTTP on 127.0.0.1 (a free port, the exporter stopped by its pid)."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

EXPORTER = "/usr/bin/prometheus-node-exporter"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def node_exporter(tmp_path):
    path = EXPORTER if os.access(EXPORTER, os.X_OK) else shutil.which("prometheus-node-exporter")
    if not path:
        pytest.skip("prometheus-node-exporter not installed (make test installs it)")
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    port = _free_port()
    proc = subprocess.Popen([path, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile", f"--collector.textfile.directory={textfiles}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 60
        while True:  # wait for it to listen (an event, not a speed)
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
                time.sleep(0.1)
        yield textfiles, lambda: urllib.request.urlopen(url, timeout=10).read().decode()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_node_exporter_serves_the_findings(cli, node_exporter):
    textfiles, scrape = node_exporter
    target = textfiles / "rcompat.prom"
    out = cli("doctor", "--only", "system", "--only", "python", "--format", "prometheus", "-o", str(target))
    assert out.returncode == 0, out.stderr
    assert [p.name for p in textfiles.iterdir()] == ["rcompat.prom"]  # no temp file left behind
    metrics = scrape()
    assert "node_textfile_scrape_error 0" in metrics  # the exporter parsed the file
    assert re.search(r'^rcompat_finding_status\{area="system",id="SYS-OS",status="ok"\} 1$', metrics, re.M)
    assert re.search(r'^rcompat_finding_status\{area="system",id="SYS-OS",status="fail"\} 0$', metrics, re.M)
    assert re.search(r'^rcompat_exit_code 0$', metrics, re.M)
    info = re.search(r"^rcompat_versions_info\{(.*)\} 1$", metrics, re.M)
    assert info and 'command="doctor"' in info.group(1) and 'glibc="glibc ' in info.group(1)


def test_health_check_writes_the_textfile_too(cli, node_exporter):
    textfiles, scrape = node_exporter
    out = cli("fleet", "health-check", "--only", "system", "--prometheus", str(textfiles / "health.prom"))
    assert out.returncode == 0 and out.stdout.startswith("rcompat: healthy"), out.stderr
    assert re.search(r'^rcompat_findings\{status="ok"\} 5$', scrape(), re.M)
