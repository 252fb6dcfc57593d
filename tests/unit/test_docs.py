"""The pages a new user reads: every relative link (and its #anchor) resolves, and every
`fleet apply --profile P --nodes N` followed by `loadgen --pods M` in one shell example is a
run loadgen's pre-flight check admits (the default scenario's pods take one GPU each)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet import profiles

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    p
    for p in REPO.rglob("*.md")
    if not any(part.startswith(".") or part == "node_modules" for part in p.relative_to(REPO).parts)
)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SHELL = re.compile(r"^```(?:sh|bash|console)\n(.*?)^```", re.S | re.M)


def _prose(page: Path) -> str:
    return FENCE.sub("", page.read_text())


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for line in _prose(page).splitlines() if line.startswith("#")}


def test_the_pages_are_found() -> None:
    names = {p.relative_to(REPO).as_posix() for p in PAGES}
    assert {"README.md", "docs/services.md", "manifests/README.md"} <= names


def _broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path) if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target} (no such heading)")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert not _broken_links(page)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Top two\n[ok](p.md#top-two) [gone](docs/x.md) [bad](#nowhere)\n")
    assert _broken_links(page) == ["docs/x.md", "#nowhere (no such heading)"]


def _examples() -> list[tuple[str, str, int, int]]:
    """(page, profile, nodes, pods) of each shell example that applies a one-profile fleet
    and then runs loadgen's default scenario."""
    found = []
    for page in PAGES:
        for block in SHELL.findall(page.read_text()):
            fleet: tuple[str, int] | None = None
            for line in block.splitlines():
                words = line.split("#", 1)[0].split()
                if words[:2] == ["fleet", "apply"] and "--profile" in words and "--nodes" in words:
                    fleet = (
                        words[words.index("--profile") + 1],
                        int(words[words.index("--nodes") + 1]),
                    )
                elif words[:1] == ["loadgen"] and "--pods" in words and fleet is not None:
                    pods = int(words[words.index("--pods") + 1])
                    found.append((page.relative_to(REPO).as_posix(), *fleet, pods))
    return found


def test_documented_fleet_and_loadgen_sizes_pass_the_pre_flight_check() -> None:
    examples = _examples()
    assert len(examples) >= 2, examples  # the README's and docs/services.md's
    catalogue = profiles.builtin()
    for page, profile, nodes, pods in examples:
        gpus = nodes * catalogue[profile].gpu_count
        assert pods <= gpus, f"{page}: {pods} one-GPU pods on {nodes} {profile} ({gpus} GPUs)"
