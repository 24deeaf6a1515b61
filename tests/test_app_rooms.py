"""Every app has the same rooms under the same names (docs/architecture.md,
"The rooms of an app"): an app with more than one views or URL module keeps
them in a `views/` or `urls/` package with plain names, so no module is named
`views_accord.py`, `key_views.py` or `api_urls.py`. Whoever looks for an
app's pages or routes finds them in one place in every app."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# views_x.py, x_views.py, urls_x.py, x_urls.py (and the same as packages).
MISNAMED = re.compile(r"^(views|urls)_\w+$|^\w+_(views|urls)$")
SKIPPED_DIRS = {"node_modules", "__pycache__", "migrations"}


def misnamed_modules(root: Path) -> list[str]:
    """The modules and packages under `root` named like views_*, *_views,
    urls_*, *_urls. Test modules (test_*.py) are named after what they test
    and are left out; so are hidden folders (.venv, .git)."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part in SKIPPED_DIRS for part in relative.parts):
            continue
        if path.is_file() and path.suffix == ".py":
            name = path.stem
        elif path.is_dir() and (path / "__init__.py").exists():
            name = path.name
        else:
            continue
        if name.startswith("test_"):
            continue
        if MISNAMED.match(name):
            found.append(str(relative))
    return found


def test_the_finder_sees_each_shape(tmp_path):
    for name in (
        "app/views_accord.py",
        "app/key_views.py",
        "app/api_urls.py",
        "app/urls_api.py",
        "app/web/token_views.py",
        "app/views.py",
        "app/urls/api.py",
        "app/views/keys.py",
        "app/reviews.py",
        "app/overviews_page.py",
        "tests/app/test_api_urls.py",
        ".venv/lib/site/key_views.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "app" / "page_urls").mkdir()
    (tmp_path / "app" / "page_urls" / "__init__.py").write_text("")

    assert misnamed_modules(tmp_path) == [
        "app/api_urls.py",
        "app/key_views.py",
        "app/page_urls",
        "app/urls_api.py",
        "app/views_accord.py",
        "app/web/token_views.py",
    ]


def test_no_module_is_named_views_x_or_x_urls():
    assert misnamed_modules(ROOT) == []
