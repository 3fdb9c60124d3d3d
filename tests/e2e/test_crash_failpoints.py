"""Kills at every commit boundary and inside the effect window (reliability.md 15: K2-K4, A1).

K2. A dry run of workload seed ``SEED`` counts its storage commits ``N`` (a
fresh store commits nothing at open, so the k-th COMMIT of a fresh run is seq
k; two dry runs must agree, or enumeration would be luck). For every k in
``1..N`` the child runs with ``PIDURABLE_FAILPOINT=<point>:k``, dies there by
SIGKILL, and a fresh process finishes the workload. SQLite points:
``sqlite.before_commit`` (after the batch's statements, before COMMIT) and
``sqlite.after_commit``; JSONL: ``jsonl.after_sidecars`` (sidecars written,
marker not yet: the commit is unconfirmed, R130) and ``jsonl.after_marker``;
PostgreSQL: ``postgres.before_commit`` (the batch prepared, its statement not
sent) and ``postgres.after_commit`` (its answer received). SQLite and JSONL
enumerate every boundary; PostgreSQL, whose every trial starts three processes
that each connect to a server, takes ``POSTGRES_SAMPLE`` boundaries per point
drawn with a fixed seed (``-m soak`` enumerates them all).
Each trial checks that the store reopened exactly at seq ``k-1`` (before) or
``k`` (after), and every invariant of ``crash_verify`` (R2, R8, R22, R36-R40,
R129-R131). Coverage is counted and must be 100% of the boundaries tried x {before, after}.

K3. The workload's own failpoints kill inside the effect sandwich (R39): after
the intent commit of the replay-unsafe effect and before the effect
(``workload.before_effect``), or after the effect and before the outcome commit
(``workload.after_effect``). Recovery finds the intent phase and records
``interrupted``; the ledger shows 0 re-executions. After a replay-safe effect
(a tick's, ``workload.after_safe_effect``) recovery runs it exactly once more and
commits its result once.

K4. Kills during recovery: after a kill at a boundary, the next run dies at its
own first commit (before it, then after it), and only the fourth run completes.

A1 (sampled). The after-commit point armed with ``raise``: the commit is durable
but the storage call fails, so the outcome is unknown to the process; the
Session must be poisoned (R8), publish nothing more, and the recovery must find
the commit exactly once.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.e2e.crash_campaign import Figures
from tests.e2e.crash_runner import (
    Backend,
    Chain,
    Setup,
    launch,
    run_failpoint_chain,
    run_parallel,
)
from tests.e2e.crash_store import read_ledger
from tests.e2e.crash_verify import ChainReport, check_chain

SEED = 7
BACKENDS: tuple[Backend, ...] = ("sqlite", "jsonl", "postgres")
POINTS: dict[Backend, tuple[str, str]] = {
    "sqlite": ("sqlite.before_commit", "sqlite.after_commit"),
    "jsonl": ("jsonl.after_sidecars", "jsonl.after_marker"),
    "postgres": ("postgres.before_commit", "postgres.after_commit"),
}
LANDS = {"sqlite.before_commit": 0, "jsonl.after_sidecars": 0, "postgres.before_commit": 0}
"""Points at which the k-th commit has not landed yet (the store reopens at k-1)."""
POSTGRES_SAMPLE = 8
"""Boundaries per point tried on PostgreSQL in the default run (all of them with -m soak)."""

backends = pytest.mark.parametrize("backend", BACKENDS)


@pytest.fixture
def database(backend: Backend, request: pytest.FixtureRequest) -> str | None:
    """The PostgreSQL URL for a ``postgres`` test (skipped, with the reason, without a server)."""
    if backend != "postgres":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


def fresh(root: Path, backend: Backend, name: str, database: str | None) -> Setup:
    directory = root / name
    directory.mkdir()
    return Setup(name=name, backend=backend, directory=directory, seed=SEED, database=database)


def trial(setup: Setup, failpoints: list[str]) -> ChainReport:
    return check_chain(run_failpoint_chain(setup, failpoints))


@pytest.fixture(scope="module")
def _counted() -> dict[Backend, int]:
    return {}


@pytest.fixture
def boundaries(
    backend: Backend,
    database: str | None,
    _counted: dict[Backend, int],
    tmp_path_factory: pytest.TempPathFactory,
) -> int:
    """Count the commits of a fresh run of this backend, twice, and require the same count."""
    if backend not in _counted:
        root = tmp_path_factory.mktemp(f"dry-runs-{backend}")
        seen = []
        for attempt in (1, 2):
            setup = fresh(root, backend, f"dry-{backend}-{attempt}", database)
            chain = Chain(setup, None, [launch(setup, 1)])
            report = check_chain(chain)
            assert not report.problems, report.problems
            seen.append(chain.runs[0].payloads("complete")[0]["seq"])
        assert seen[0] == seen[1], f"{backend}: a fresh run of seed {SEED} committed {seen} times"
        _counted[backend] = seen[0]
    return _counted[backend]


def killed_by_its_failpoint(report: ChainReport, count: int) -> str | None:
    """Return why the first ``count`` runs were not each killed by their failpoint, if so."""
    runs = report.chain.runs
    for run in runs[:count]:
        if run not in report.chain.kills:
            return f"{report.chain.describe(run)}: the failpoint did not kill the run"
    if len(runs) != count + 1:
        return f"{report.chain.describe()}: expected {count} kills and one complete run"
    return None


def chosen_boundaries(backend: Backend, total: int, config: pytest.Config) -> list[int]:
    """Every boundary, or for PostgreSQL outside a soak run a seeded sample of them."""
    every = list(range(1, total + 1))
    if backend != "postgres" or "soak" in (config.getoption("-m") or "").replace("not soak", ""):
        return every
    return sorted(random.Random(SEED).sample(every, min(POSTGRES_SAMPLE, total)))


@backends
def test_a_kill_just_before_and_just_after_every_commit_loses_nothing_and_resumes(
    backend: Backend,
    boundaries: int,
    database: str | None,
    tmp_path: Path,
    pytestconfig: pytest.Config,
) -> None:
    ks = chosen_boundaries(backend, boundaries, pytestconfig)
    items = [(point, k) for point in POINTS[backend] for k in ks]

    def one(item: tuple[str, int]) -> tuple[str, int, ChainReport]:
        point, k = item
        setup = fresh(tmp_path, backend, f"{point}-{k:03d}", database)
        return point, k, trial(setup, [f"{point}:{k}"])

    results = run_parallel(one, items, workers=2)
    problems: list[str] = []
    covered = 0
    for point, k, report in results:
        problems += report.problems
        why = killed_by_its_failpoint(report, 1)
        if why is not None:
            problems.append(why)
            continue
        expected = k - 1 if point in LANDS else k
        reopened = report.chain.runs[1].payloads("opened")[0]["seq"]
        if reopened != expected:
            problems.append(
                f"{report.chain.describe()}: reopened at seq {reopened}, expected {expected}"
            )
            continue
        covered += 1
    figures = Figures.of([report for _, _, report in results])
    tried = f"{covered} of {len(items)} boundaries (of {2 * boundaries})"
    print(figures.summary(f"K2 {backend} seed {SEED}: {tried}"))
    assert not problems, "\n".join(problems[:20])
    assert covered == len(items) == 2 * len(ks)
    assert figures.unpublished == {0: len(ks), 1: len(ks)}


@backends
@pytest.mark.parametrize("window", ["before_effect", "after_effect"])
@pytest.mark.parametrize("occurrence", [1, 2])
def test_a_kill_inside_the_unsafe_effect_window_ends_interrupted_and_never_runs_it_again(
    backend: Backend, window: str, occurrence: int, database: str | None, tmp_path: Path
) -> None:
    spec = f"workload.{window}:{occurrence}"
    report = trial(fresh(tmp_path, backend, f"{backend}-{window}-{occurrence}", database), [spec])
    where = report.chain.describe()
    assert not report.problems, "\n".join(report.problems)
    assert killed_by_its_failpoint(report, 1) is None, where
    [label] = report.interrupted
    unsafe = [line for line in read_ledger(report.chain.setup) if line["effect"] == "unsafe"]
    runs = [line["run"] for line in unsafe if line["label"] == label]
    # Before the effect: it never ran. After it: it ran once, in the killed run.
    assert runs == ([] if window == "before_effect" else [1]), where
    others = [line for line in unsafe if line["label"] != label]
    assert len(others) == 1, where  # the other effect ran exactly once
    says = report.chain.runs[1].payloads("interrupted")
    assert [item["label"] for item in says] == [label], where


@backends
def test_a_kill_right_after_a_replay_safe_effect_runs_it_once_more_and_commits_it_once(
    backend: Backend, database: str | None, tmp_path: Path
) -> None:
    setup = fresh(tmp_path, backend, f"{backend}-after-safe-effect", database)
    report = trial(setup, ["workload.after_safe_effect:1"])
    where = report.chain.describe()
    assert not report.problems, "\n".join(report.problems)
    assert killed_by_its_failpoint(report, 1) is None, where
    ticks = [line for line in read_ledger(report.chain.setup) if line["effect"] == "tick"]
    first = (ticks[0]["label"], ticks[0]["n"])
    again = [line["run"] for line in ticks if (line["label"], line["n"]) == first]
    assert again == [1, 2], where  # once in the killed run, once more in recovery
    assert report.safe_repeats == 1, where
    assert report.interrupted == [], where


@backends
def test_kills_during_recovery_before_and_after_its_first_commit_still_resume_correctly(
    backend: Backend, boundaries: int, database: str | None, tmp_path: Path
) -> None:
    before, after = POINTS[backend]
    sample = range(10, boundaries - 5, 14)  # where tasks are live

    def one(k: int) -> ChainReport:
        setup = fresh(tmp_path, backend, f"compound-{k:03d}", database)
        return trial(setup, [f"{after}:{k}", f"{before}:1", f"{after}:1"])

    reports = run_parallel(one, sample)
    figures = Figures.of(reports)
    print(figures.summary(f"K4 {backend} seed {SEED}: boundaries {list(sample)}"))
    assert not figures.problems, "\n".join(figures.problems[:20])
    for report in reports:
        assert killed_by_its_failpoint(report, 3) is None, report.chain.describe()
        last = report.chain.runs[-1]
        assert last.payloads("resume-task"), f"{report.chain.describe()}: nothing to recover"
    # Some recoveries died inside Session.open, at the commit that turns the tasks a
    # kill left running back into pending (R22): opened, but never got a Session.
    inside_open = [
        r
        for r in reports
        if r.chain.runs[1].payloads("opened") and not r.chain.runs[1].payloads("session")
    ]
    assert inside_open, "no kill landed inside reconciliation at open"
    assert figures.kills == 3 * len(sample)


@backends
def test_an_ambiguous_commit_poisons_the_session_and_recovery_finds_it_exactly_once(
    backend: Backend, boundaries: int, database: str | None, tmp_path: Path
) -> None:
    point = POINTS[backend][1]  # the commit has landed, yet the storage call fails
    sample = range(5, boundaries, 14)

    def one(k: int) -> tuple[int, ChainReport]:
        setup = fresh(tmp_path, backend, f"ambiguous-{k:03d}", database)
        return k, trial(setup, [f"{point}:{k}:raise"])

    for k, report in run_parallel(one, sample):
        where = report.chain.describe()
        assert not report.problems, "\n".join(report.problems)
        first, recovery = report.chain.runs
        assert first.poisoned, f"{where}: {first.stderr[-1000:]}"
        # R8: the poisoned Session published nothing from the failed commit on, and
        # acknowledged nothing from it; the commit itself is durable.
        assert max(item["seq"] for item in first.payloads("published")) == k - 1, where
        assert all(ack["seq"] < k for ack in first.acks), where
        assert recovery.payloads("opened")[0]["seq"] == k, where
