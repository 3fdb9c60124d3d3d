"""Benchmark: command output through ``LocalEnv.exec`` against ``cat FILE > /dev/null``.

``python -m pi_durable_tui.bench exec [--mib N] [--repeat N] [--json] [--dir PATH]
[--env ssh://user@host[:port]/dir]``

It writes a text file of ``--mib`` MiB (default 256; 80-byte lines) under
``--dir`` (default: the system temp directory) and measures, in the same run:

- ``baseline.cat_devnull``: ``bash -c 'cat FILE > /dev/null'`` started from this
  process (the floor: the file read with no pipe at all);
- ``exec.plain``: ``bash -c 'cat FILE'`` through ``LocalEnv.exec`` with an
  ``on_output`` that counts bytes (what a head-retaining tool receives: every byte);
- ``exec.tail``: the same with a tail ``OutputWindow`` of 50 KiB / 2,000 lines,
  as the ``bash`` tool gets (R105): most output is skipped, not delivered;
- ``exec.tail_spill``: the tail window plus the ``bash`` tool's spill policy
  (51,200 bytes / 2,000 lines), so the complete output is also written to a file;
- ``exec.job``: ``cat FILE`` as a background job (``LocalEnv.start_job``, with
  one secret-looking variable set): its output read from the pipe, redacted as it
  is written and appended to the job's log (issue 13), until the job ended;
  ``baseline.cat_file`` is ``bash -c 'cat FILE > LOG'``, what a job writing its
  log itself (unredacted) costs.

With ``--env ssh://...`` the same three workloads also run through ``SshEnv``
(``ssh.plain``, ``ssh.tail``, ``ssh.tail_spill``) on a copy of the file written
to the remote directory, with their ratio against the same local baseline, plus
``baseline.openssh_cat``: OpenSSH's own client running ``cat FILE`` there with
its output to ``/dev/null`` (what the network and the remote side cost, with
no Python in the way). Connecting is not timed; each run is one ``exec``.

Each exec workload runs in a child process of its own (``--child``), so its
``peak_rss_mib`` (``ru_maxrss``) is its own; a child imports only the
environment package. Per workload: ``wall_ms`` (best of ``--repeat`` runs),
``mib_per_s``, ``ratio`` (wall over the baseline's), ``peak_rss_mib`` (largest
over the runs), ``callbacks`` (``on_output`` calls) and ``wrong`` when the byte
or line totals seen by the consumer differ from the file. ``--json`` prints one
object keyed by workload. Figures are printed, never asserted (DESIGN.md 6).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.env import (
    ExecutionEnv,
    LocalEnv,
    OutputStream,
    OutputWindow,
    SkippedOutput,
    SpillPolicy,
)

LINE = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-output-line-#####\n"
WORKLOADS = ("plain", "tail", "tail_spill")
LOCAL_WORKLOADS = (*WORKLOADS, "job")
"""The workloads of ``LocalEnv`` only (no job runs over SSH)."""
JOB_SECRET = "bench-0123456789-job-secret"
"""The value of the secret-looking variable the ``job`` workload's log is redacted of."""
TAIL = OutputWindow(max_bytes=51200, max_lines=2000)
SPILL = SpillPolicy(after_bytes=51200, after_lines=2000)


def write_file(path: str, mib: int) -> tuple[int, int]:
    """Write ``mib`` MiB of 80-byte lines to ``path``; return (bytes, lines)."""
    block = LINE * ((1 << 20) // len(LINE))
    with open(path, "wb") as stream:
        for _ in range(mib):
            stream.write(block)
        stream.flush()
        os.fsync(stream.fileno())  # so its writeback does not compete with the runs
    return mib * len(block), mib * block.count(b"\n")


async def _open_env(path: str, url: str | None) -> ExecutionEnv:
    if url is None:
        return LocalEnv(os.path.dirname(path))
    from pi_durable_tui.env.ssh import SshEnv  # only the SSH runs import asyncssh

    return await SshEnv.connect(url)


def _count_lines(path: str) -> int:
    lines = 0
    with open(path, "rb") as stream:
        while block := stream.read(1 << 20):
            lines += block.count(b"\n")
    return lines


async def _run_job(path: str) -> dict[str, Any]:
    environ = {**os.environ, "BENCH_SERVICE_TOKEN": JOB_SECRET}
    env = LocalEnv(os.path.dirname(path), environ=environ)
    try:
        started = time.perf_counter()
        job = await env.start_job(f"cat {shlex.quote(path)}")
        exit_code = await job.wait()
        wall = time.perf_counter() - started
        totals = {"bytes": os.path.getsize(job.log_path), "lines": _count_lines(job.log_path)}
    finally:
        await env.cleanup()
    return {
        "wall_s": wall,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "exit_code": exit_code,
        "spilled": False,
        "callbacks": 0,
        **totals,
    }


async def _run_child(workload: str, path: str, url: str | None = None) -> dict[str, Any]:
    if workload == "job":
        return await _run_job(path)
    totals = {"bytes": 0, "lines": 0, "callbacks": 0}

    def consume(chunk: bytes, stream: OutputStream, skipped: SkippedOutput | None) -> None:
        totals["callbacks"] += 1
        totals["bytes"] += len(chunk)
        if workload != "plain":  # a tail tool counts lines; a head tool stops looking early
            totals["lines"] += chunk.count(b"\n")
        if skipped is not None:
            totals["bytes"] += skipped.byte_count
            totals["lines"] += skipped.line_count

    env = await _open_env(path, url)
    try:
        started = time.perf_counter()
        result = await env.exec(
            f"cat {shlex.quote(path)}",
            on_output=consume,
            window=None if workload == "plain" else TAIL,
            spill=SPILL if workload == "tail_spill" else None,
        )
        wall = time.perf_counter() - started
        if result.spill_path is not None:
            await env.remove(result.spill_path)
    finally:
        await env.cleanup()
        closing = getattr(env, "close", None)
        if closing is not None:
            await closing()
    return {
        "wall_s": wall,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "exit_code": result.exit_code,
        "spilled": result.spill_path is not None,
        **totals,
    }


def run_child(workload: str, path: str, url: str | None = None) -> dict[str, Any]:
    """Run one exec workload in a fresh interpreter and return what it measured."""
    command = [sys.executable, "-m", "pi_durable_tui.bench.exec_output", "--child", workload, path]
    output = subprocess.run(
        [*command, *([] if url is None else ["--env", url])],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(output)
    return result


def baseline(path: str, target: str = "/dev/null") -> float:
    """Seconds of ``bash -c 'cat FILE > TARGET'`` (a file written is deleted after)."""
    started = time.perf_counter()
    subprocess.run(["bash", "-c", f"cat {shlex.quote(path)} > {shlex.quote(target)}"], check=True)
    seconds = time.perf_counter() - started
    if target != "/dev/null":
        os.unlink(target)
    return seconds


@dataclass(frozen=True)
class Remote:
    """Where the SSH workloads run: the ``--env`` URL and the file's copy there."""

    url: str
    path: str
    openssh: list[str] | None


def openssh_cat(remote: Remote) -> float | None:
    """Seconds of OpenSSH's client running ``cat FILE`` remotely, output to /dev/null."""
    if remote.openssh is None:
        return None
    started = time.perf_counter()
    subprocess.run(
        [*remote.openssh, f"cat {shlex.quote(remote.path)}"],
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def _entry(
    name: str, results: list[dict[str, Any]], size: int, lines: int, floor: float
) -> dict[str, Any]:
    mib = size / (1 << 20)
    best = min(result["wall_s"] for result in results)
    entry: dict[str, Any] = {
        "wall_ms": best * 1000,
        "mib_per_s": mib / best,
        "ratio": best / floor,
        "peak_rss_mib": max(result["peak_rss_mib"] for result in results),
        "callbacks": results[0]["callbacks"],
    }
    last = results[-1]
    expected_lines = 0 if name == "plain" else lines
    if last["bytes"] != size or last["lines"] != expected_lines or last["exit_code"] != 0:
        entry["wrong"] = (
            f"saw {last['bytes']} bytes, {last['lines']} lines, exit {last['exit_code']}"
        )
    if (name == "tail_spill") != last["spilled"]:
        entry["wrong"] = f"spill file {'missing' if not last['spilled'] else 'unexpected'}"
    return entry


def measure(
    path: str, size: int, lines: int, repeat: int, remote: Remote | None = None
) -> dict[str, dict[str, Any]]:
    """Run the baselines and every workload ``repeat`` times, interleaved."""
    baseline(path)  # warm the page cache
    floors: list[float] = []
    openssh: list[float] = []
    to_file: list[float] = []
    runs: dict[str, list[dict[str, Any]]] = {f"exec.{name}": [] for name in LOCAL_WORKLOADS}
    if remote is not None:
        runs.update({f"ssh.{name}": [] for name in WORKLOADS})
    for _ in range(repeat):
        for key in runs:
            floors.append(baseline(path))
            kind, name = key.split(".")
            if kind == "ssh":
                assert remote is not None
                seconds = openssh_cat(remote)
                if seconds is not None:
                    openssh.append(seconds)
                runs[key].append(run_child(name, remote.path, remote.url))
            else:
                if name == "job":
                    to_file.append(baseline(path, f"{path}.log"))
                runs[key].append(run_child(name, path))
            print(f"  {key}: {runs[key][-1]['wall_s'] * 1000:.0f} ms", file=sys.stderr)
    floor = min(floors)
    mib = size / (1 << 20)
    report: dict[str, dict[str, Any]] = {
        "baseline.cat_devnull": {"wall_ms": floor * 1000, "mib_per_s": mib / floor, "mib": mib}
    }
    for name, times in (("cat_file", to_file), ("openssh_cat", openssh)):
        if times:
            best = min(times)
            report[f"baseline.{name}"] = {
                "wall_ms": best * 1000,
                "mib_per_s": mib / best,
                "ratio": best / floor,
            }
    for key, results in runs.items():
        report[key] = _entry(key.split(".")[1], results, size, lines, floor)
    return report


def render(report: dict[str, dict[str, Any]]) -> str:
    """The report as a table."""
    rows = [f"{'workload':<22}{'wall ms':>10}{'MiB/s':>10}{'ratio':>8}{'peak RSS':>10}{'calls':>8}"]
    for key, entry in report.items():
        ratio = f"{entry['ratio']:.2f}" if "ratio" in entry else "1"
        rss = f"{entry['peak_rss_mib']:.1f}" if "peak_rss_mib" in entry else "-"
        calls = str(entry.get("callbacks", "-"))
        rows.append(
            f"{key:<22}{entry['wall_ms']:>10.1f}{entry['mib_per_s']:>10.0f}{ratio:>8}"
            f"{rss:>10}{calls:>8}" + (f"  WRONG: {entry['wrong']}" if "wrong" in entry else "")
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    """Run the benchmark and print a table, or one JSON object with ``--json``.

    Args:
        argv: Command-line arguments without the program name.

    Returns:
        0, or 1 when a workload saw wrong totals.
    """
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench exec")
    parser.add_argument("--mib", type=int, default=256, help="size of the file (MiB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per workload (best counts)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dir", default=None, help="where to write the file")
    parser.add_argument("--env", default=None, help="also run over SSH: ssh://user@host[:port]/dir")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(_run_child(args.child[0], args.child[1], args.env))))
        return 0
    if args.mib < 1 or args.repeat < 1:
        parser.error("--mib and --repeat must be at least 1")
    with tempfile.TemporaryDirectory(prefix="pi-bench-exec-", dir=args.dir) as directory:
        path = os.path.join(directory, "output.txt")
        size, lines = write_file(path, args.mib)
        remote = None if args.env is None else asyncio.run(upload(args.env, path))
        try:
            report = measure(path, size, lines, args.repeat, remote)
        finally:
            if remote is not None:
                asyncio.run(remove_upload(remote))
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 1 if any("wrong" in entry for entry in report.values()) else 0


async def upload(url: str, path: str) -> Remote:
    """Copy the file to a fresh temp directory below the ``--env`` directory."""
    from pi_durable_tui.env.ssh import SshEnv

    env = await SshEnv.connect(url)
    try:
        directory = env.join_path(env.cwd, f"pi-bench-exec-{os.getpid()}")
        remote_path = env.join_path(directory, "output.txt")
        with open(path, "rb") as stream:  # in pieces: children inherit this peak RSS
            await env.write_file(remote_path, b"")
            while piece := stream.read(8 << 20):
                await env.append_file(remote_path, piece)
        target = env.target
    finally:
        await env.close()
    openssh = None
    if shutil.which("ssh"):
        # OpenSSH finds ~ in the password database, asyncssh in $HOME: name the files.
        ssh_dir = os.path.expanduser("~/.ssh")
        openssh = ["ssh", "-o", "BatchMode=yes", "-p", str(target.port)]
        openssh += ["-o", f"UserKnownHostsFile={ssh_dir}/known_hosts"]
        for key in ("id_ed25519", "id_ecdsa", "id_rsa"):
            if os.path.exists(os.path.join(ssh_dir, key)):
                openssh += ["-i", os.path.join(ssh_dir, key)]
        openssh.append(f"{target.user}@{target.host}")
    return Remote(url, remote_path, openssh)


async def remove_upload(remote: Remote) -> None:
    """Remove the remote copy and its directory."""
    from pi_durable_tui.env.ssh import SshEnv

    env = await SshEnv.connect(remote.url)
    try:
        await env.remove(os.path.dirname(remote.path), recursive=True, force=True)
    finally:
        await env.close()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
