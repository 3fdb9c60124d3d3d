"""AGENTS.md / CLAUDE.md discovery: the global file, then the filesystem root down to the cwd."""

from __future__ import annotations

from pathlib import Path

from pi_durable_tui.app import discover_context_files
from pi_durable_tui.app.files._context_files import MAX_BYTES


def found_under(cwd: Path, *roots: Path) -> list[tuple[Path, str]]:
    """The discovered files inside ``roots`` (directories above the test's are not ours)."""
    return [
        (found.path, found.text)
        for found in discover_context_files(cwd)
        if any(found.path.is_relative_to(root) for root in roots)
    ]


def test_the_global_file_comes_first_then_each_directory_from_the_top_down_to_the_cwd(
    home: Path, project: Path
) -> None:
    cwd = project / "packages" / "api"
    cwd.mkdir(parents=True)
    home.mkdir()
    (home / "AGENTS.md").write_text("global")
    (project / "AGENTS.md").write_text("project")
    (project / "packages" / "CLAUDE.md").write_text("packages")
    (cwd / "AGENTS.md").write_text("api")

    assert found_under(cwd, home, project) == [
        (home / "AGENTS.md", "global"),
        (project / "AGENTS.md", "project"),
        (project / "packages" / "CLAUDE.md", "packages"),
        (cwd / "AGENTS.md", "api"),
    ]


def test_agents_md_is_preferred_over_claude_md_in_the_same_directory(
    home: Path, project: Path
) -> None:
    (project / "CLAUDE.md").write_text("claude")
    (project / "AGENTS.md").write_text("agents")

    assert found_under(project, home, project) == [(project / "AGENTS.md", "agents")]


def test_the_cwd_is_resolved_so_a_symlinked_checkout_finds_the_same_files(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (project / "AGENTS.md").write_text("agents")
    link = tmp_path / "link"
    link.symlink_to(project)

    assert found_under(link, home, project) == [(project / "AGENTS.md", "agents")]


def test_a_context_file_larger_than_the_limit_is_cut_with_a_note_saying_so(
    home: Path, project: Path
) -> None:
    (project / "AGENTS.md").write_bytes(b"a" * MAX_BYTES + b"TAIL")

    [(path, text)] = found_under(project, home, project)

    assert text.startswith("a" * MAX_BYTES)
    assert "TAIL" not in text
    assert text.endswith(f"[... {path} is longer than 256 KiB; the rest was not read]")
