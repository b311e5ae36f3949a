"""Helpers shared by the benchmark scripts: machine description, JSON output."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "benchmarks"


def machine_info() -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
    }


def write_json(name: str, payload: dict) -> Path:
    BENCH_DIR.mkdir(exist_ok=True)
    out = BENCH_DIR / name
    payload = {"machine": machine_info(), **payload}
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    os.replace(tmp, out)
    return out


def busy_loops(n: int) -> list[subprocess.Popen]:
    """``n`` processes that spin (``python -c 'while True: pass'``): the cores kept busy
    beside a measurement; the caller kills them."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def shared(*parts: str) -> Path:
    sys.path.insert(0, str(ROOT))
    from suffixlm.corpora import shared_path

    p = shared_path(*parts)
    if p is None:
        sys.exit(f"needs ../shared/{'/'.join(parts)} (not found)")
    return p


def run_sampled(cmd: list[str], env: dict | None = None) -> tuple[float, int, list[int], str]:
    """Run ``cmd`` (in ``env``: None, this process's environment), sampling the RSS of it
    and of its child processes every 50 ms (psutil):
    (wall seconds, its peak bytes, the children's peak bytes, its stdout). A failure
    ends the benchmark with the command's stderr."""
    import time

    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    root = psutil.Process(proc.pid)
    peak: dict[int, int] = {}
    while proc.poll() is None:
        try:
            for p in [root] + root.children(recursive=True):
                try:
                    peak[p.pid] = max(peak.get(p.pid, 0), p.memory_info().rss)
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    out, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err.decode()}")
    driver = peak.pop(proc.pid, 0)
    return wall, driver, list(peak.values()), out.decode()
