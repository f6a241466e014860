"""The Python API the README shows, in a fresh interpreter: `import rcompat` and nothing else, then every
public name, twice. No public name of a package may be a submodule's name too: importing the submodule
(a first call does, so does the CLI) would replace the function on the package."""
from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "rcompat"


def _readme_python_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## From Python\s+```python\n(.*?)```", text, re.S)
    assert block, "README.md has no ```python block under '## From Python'"
    return block.group(1)


def _packages():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        yield ".".join(init.parent.relative_to(REPO).parts), init.parent


def test_no_public_name_of_a_package_is_also_its_submodule():
    clashes = []
    for name, directory in _packages():
        package = importlib.import_module(name)
        exported = set(getattr(package, "__all__", ())) | {
            n.name for n in ast.parse((directory / "__init__.py").read_text()).body if isinstance(n, ast.FunctionDef)}
        submodules = {m.name for m in pkgutil.iter_modules([str(directory)])}
        for public in exported & submodules:
            if getattr(package, "_EXPORTS", {}).get(public) != f"{name}.{public}":  # the sub-package itself
                clashes.append(f"{name}.{public}")
    assert clashes == []
    assert not (PACKAGE / "callable_module.py").exists()


def test_the_public_functions_survive_importing_every_module():
    """What a first call or the CLI does: import every module, then read the names again."""
    script = (
        "import importlib, pkgutil, rcompat, rcompat.elf, rcompat.parity\n"
        "before = {p: {n: getattr(importlib.import_module(p), n) for n in importlib.import_module(p).__all__}\n"
        "          for p in ('rcompat', 'rcompat.elf', 'rcompat.parity')}\n"
        "for m in pkgutil.walk_packages(rcompat.__path__, 'rcompat.'):\n"
        "    if not m.name.endswith('__main__'): importlib.import_module(m.name)\n"
        "changed = [f'{p}.{n}' for p, names in before.items() for n, v in names.items()\n"
        "           if getattr(importlib.import_module(p), n) is not v]\n"
        "print(changed)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_import_rcompat_imports_no_engine():
    script = "import sys, rcompat; print(sorted(m for m in sys.modules if m.startswith('rcompat')))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == ["rcompat", "rcompat.exports"]


@pytest.fixture(scope="module")
def readme_inputs(gcc, load_helper, tmp_path_factory) -> dict[str, str]:
    """Real files for the README's placeholders: libraries compiled from fixtures/elf and two roots."""
    libs = load_helper("elf_fixture_build", REPO / "fixtures/elf/build.py").build_all(tmp_path_factory.mktemp("elf"))
    demo = load_helper("_diff_build", REPO / "tests/elf/_diff_build.py").build_demo(gcc, tmp_path_factory.mktemp("demo"))
    roots = tmp_path_factory.mktemp("roots")
    for side, lib in (("old", libs["core_v1"]), ("new", libs["core_v2"])):
        (roots / side / "usr/lib").mkdir(parents=True)
        (roots / side / "usr/lib/libcore.so").write_bytes(lib.read_bytes())
    return {"path": str(libs["user"]), "old": str(demo["v1"]), "new": str(demo["v2"]), "a": str(demo["v1"]),
            "b": str(demo["inserted"]), "loaded": str(libs["core_v1"]), "then": str(libs["user"]),
            "old_root": str(roots / "old"), "new_root": str(roots / "new")}


@pytest.mark.slow
def test_the_readme_python_block_runs_as_written_twice_in_a_fresh_interpreter(readme_inputs):
    """The block's placeholders become real inputs (variables defined before it, the `[...]` lists and
    the two image names filled in); its calls are not edited. It runs twice in one interpreter: every
    public name is called a first and a second time."""
    block = _readme_python_block()
    fills = {"loaded=[...]": f"loaded=[{readme_inputs['loaded']!r}]", "then=[...]": f"then=[{readme_inputs['then']!r}]",
             '"old.tar"': repr(readme_inputs["old_root"]), '"new-rootfs/"': repr(readme_inputs["new_root"])}
    for placeholder, value in fills.items():
        assert placeholder in block, f"the README block changed: {placeholder} is gone (update this test)"
        block = block.replace(placeholder, value)
    names = {k: readme_inputs[k] for k in ("path", "old", "new", "a", "b")}
    script = "\n".join([
        "import sys",
        *(f"{k} = {v!r}" for k, v in names.items()),
        f"BLOCK = {block!r}",
        "for run in (1, 2):",
        "    exec(compile(BLOCK, 'README.md', 'exec'), {**globals()})",
        "    print(f'=== run {run} done', flush=True)",
    ])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("=== run ") == 2
    # print(rcompat.render(report, "markdown")) printed the markdown report each time
    assert out.stdout.count("### rcompat doctor report") == 2, out.stdout[:2000]
