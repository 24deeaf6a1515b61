"""The import graph between the project's apps, as markdown (docs/import-graph.md):

    .venv/bin/python scripts/import_graph.py                    # this tree
    .venv/bin/python scripts/import_graph.py --root DIR         # another checkout
    .venv/bin/python scripts/import_graph.py --before DIR       # DIR's figures -> this tree's

An app is a top-level package of the tree (a folder with an __init__.py: the
layers of pyproject's import-linter contract, the benchmarks and the tests).
grimp (import-linter's library) reads every import statement of every module,
inside functions and under TYPE_CHECKING too, as import-linter does; it runs
none of them. Printed: per app its modules (migrations among them), the
arrows between apps (app A imports app B, counted as the pairs of modules
that carry it: one module importing another once however many names it
takes), the cycles inside each app (strongly connected components of more
than one module in the module graph restricted to that app, with the imports
that close them) and the cycles between apps. With --before, each figure is
DIR's and then this tree's (DIR is read in a process of its own, so the two
trees' packages never meet on one sys.path).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
# The layers' order as pyproject.toml states it, top first; an app outside
# the layers (the benchmarks, the tests) follows them in alphabetical order.
OTHERS_ORDER = ("benchmarks", "tests")


def apps_of(root: Path) -> list[str]:
    return sorted(
        path.name
        for path in root.iterdir()
        if path.is_dir() and (path / "__init__.py").is_file() and path.name.isidentifier()
    )


def layer_order(root: Path) -> list[str]:
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    contracts = pyproject.get("tool", {}).get("importlinter", {}).get("contracts", [])
    for contract in contracts:
        if contract.get("type") == "layers":
            return [name.strip() for layer in contract["layers"] for name in layer.split("|")]
    return []


def ordered(apps: set[str], root: Path) -> list[str]:
    layers = [app for app in layer_order(root) if app in apps]
    rest = sorted(apps - set(layers), key=lambda app: (app not in OTHERS_ORDER, app))
    return layers + rest


def app_of(module: str) -> str:
    return module.split(".", 1)[0]


def strong_components(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def figures(root: Path, exclude_type_checking: bool) -> dict:
    """The tree's figures as plain data (what --json prints)."""
    apps = apps_of(root)
    sys.path.insert(0, str(root))
    graph = grimp.build_graph(
        *apps, exclude_type_checking_imports=exclude_type_checking, cache_dir=None
    )
    modules: dict[str, int] = defaultdict(int)
    migrations: dict[str, int] = defaultdict(int)
    inside: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    arrows: dict[str, int] = defaultdict(int)
    statements: dict[str, int] = defaultdict(int)
    for module in sorted(graph.modules):
        app = app_of(module)
        modules[app] += 1
        if ".migrations" in module:
            migrations[app] += 1
        for imported in graph.find_modules_directly_imported_by(module):
            target = app_of(imported)
            if target == app:
                inside[app][module].add(imported)
                continue
            key = f"{app} {target}"
            arrows[key] += 1
            statements[key] += len(graph.get_import_details(importer=module, imported=imported))
    cycles = {}
    untasked = {}
    for app in apps:
        edges = inside[app]
        # import-linter's acyclic contract sets aside what an app's tasks
        # module imports (it runs the services that queue its tasks).
        rest = {module: set(to) for module, to in edges.items() if not module.endswith(".tasks")}
        untasked[app] = strong_components(sorted(rest), rest)
        components = strong_components(sorted(edges), edges)
        cycles[app] = [
            {
                "modules": component,
                "imports": sorted(
                    f"{a} -> {b}" for a in component for b in edges.get(a, ()) if b in component
                ),
            }
            for component in components
        ]
    app_edges: dict[str, set[str]] = defaultdict(set)
    for key in arrows:
        importer, imported = key.split()
        app_edges[importer].add(imported)
    return {
        "root": str(root),
        "commit": git_commit(root),
        "apps": apps,
        "modules": dict(modules),
        "migrations": dict(migrations),
        "arrows": dict(arrows),
        "statements": dict(statements),
        "cycles": cycles,
        "cycles_without_tasks": untasked,
        "app_cycles": strong_components(apps, app_edges),
    }


def git_commit(root: Path) -> str:
    done = subprocess.run(  # noqa: S603
        ["git", "-C", str(root), "log", "-1", "--format=%h %cd", "--date=short"],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "not a git checkout"


def figures_elsewhere(root: Path, exclude_type_checking: bool) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--root", str(root), "--json"]
    if exclude_type_checking:
        command.append("--exclude-type-checking")
    done = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603
    return json.loads(done.stdout)


def cell(before: int | None, after: int) -> str:
    if before is None:
        return str(after or "")
    if before == after:
        return str(after or "")
    return f"{before}→{after}"


def count_cycles(found: dict, app: str) -> int:
    return len(found["cycles"].get(app, []))


def markdown(after: dict, before: dict | None, root: Path) -> str:
    apps = ordered(set(after["apps"]) | set(before["apps"] if before else ()), root)
    lines = []
    if before:
        lines.append(f"Before: `{before['commit']}`; after: `{after['commit']}` (before→after).")
    else:
        lines.append(f"Tree: `{after['commit']}`.")
    lines += [
        "",
        "| app | modules | migrations | arrows out | arrows in | cycles inside |",
        "|---|--:|--:|--:|--:|--:|",
    ]

    def of(found: dict | None, app: str, what: str) -> int | None:
        if found is None:
            return None
        if what in ("modules", "migrations"):
            return int(found[what].get(app, 0))
        if what == "cycles":
            return count_cycles(found, app)
        side = 0 if what == "out" else 1
        return sum(n for key, n in found["arrows"].items() if key.split()[side] == app)

    for app in apps:
        row = [
            cell(of(before, app, what), of(after, app, what) or 0)
            for what in ("modules", "migrations", "out", "in", "cycles")
        ]
        lines.append(f"| `{app}` | " + " | ".join(row) + " |")
    total_before = sum(before["modules"].values()) if before else None
    lines.append(f"| all | {cell(total_before, sum(after['modules'].values()))} | | | | |")
    lines += [
        "",
        "Arrows: the row's app imports the column's, in pairs of modules.",
        "",
        "| imports ↓ → | " + " | ".join(f"`{app}`" for app in apps) + " |",
        "|---|" + "--:|" * len(apps),
    ]
    for importer in apps:
        row = []
        for imported in apps:
            key = f"{importer} {imported}"
            was = before["arrows"].get(key, 0) if before else None
            row.append("·" if importer == imported else cell(was, after["arrows"].get(key, 0)))
        lines.append(f"| `{importer}` | " + " | ".join(row) + " |")
    for label, found in (("before", before), ("after", after)):
        if found is None:
            continue
        lines += ["", f"Cycles inside an app ({label if before else 'this tree'}):", ""]
        any_cycle = False
        for app in apps:
            for component in found["cycles"].get(app, []):
                any_cycle = True
                members = ", ".join(f"`{module}`" for module in component["modules"])
                closing = "; ".join(component["imports"])
                lines.append(f"- {members} ({closing})")
        if not any_cycle:
            lines.append("- none")
        left = [
            ", ".join(component)
            for app in apps
            for component in found.get("cycles_without_tasks", {}).get(app, [])
        ]
        lines.append(
            "- left when a `tasks` module's own imports are set aside (as import-linter does): "
            + ("; ".join(left) if left else "none")
        )
        app_cycles = found["app_cycles"]
        lines.append(
            "- between apps: "
            + ("; ".join(", ".join(cycle) for cycle in app_cycles) if app_cycles else "none")
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to read (this one)")
    parser.add_argument("--before", type=Path, help="another tree, shown first in each figure")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    parser.add_argument(
        "--exclude-type-checking",
        action="store_true",
        help="leave out imports under `if TYPE_CHECKING:` (import-linter counts them)",
    )
    args = parser.parse_args()
    root = args.root.resolve()
    after = figures(root, args.exclude_type_checking)
    if args.json:
        print(json.dumps(after, indent=1))
        return
    before = (
        figures_elsewhere(args.before.resolve(), args.exclude_type_checking)
        if args.before
        else None
    )
    print(markdown(after, before, root))


if __name__ == "__main__":
    main()
