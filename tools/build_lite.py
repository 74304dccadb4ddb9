"""Build the living spec for the browser (`make lite`): JupyterLite with the Pyodide kernel,
offline, into build/spec/lite/ (the site links each chapter that runs there).

Everything comes from the registries, pinned: Pyodide 314.0.6 from npm (lite/package-lock.json),
its Python wheels from PyPI (lite/requirements.txt, hashes checked), JupyterLite from the venv
(constraints.txt). histtrim's wheel is built from this checkout; livingspec, the examples folder
and the bench scripts and results the chapters read are packed as small wheels. The npm
Pyodide has no wheels, and its pyodide-lock.json names the CDN's builds: `write_lock` rewrites
it for exactly the wheels shipped here (sha256 of each file), so the kernel loads nothing from
a CDN or PyPI.

Usage: python tools/build_lite.py [--out build/spec/lite]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from livingspec.lite import RAISES

ROOT = Path(__file__).resolve().parent.parent
LITE = ROOT / "lite"
WORK = ROOT / "build" / "lite"
CHAPTERS = json.loads((LITE / "chapters.json").read_text(encoding="utf-8"))
# Pyodide's interpreter, for the environment markers of Requires-Dist.
MARKERS = {"sys_platform": "emscripten", "platform_system": "Emscripten", "os_name": "posix",
           "platform_machine": "wasm32", "implementation_name": "cpython",
           "platform_python_implementation": "CPython", "python_version": "3.14",
           "python_full_version": "3.14.2", "extra": ""}
# A fixed date inside the wheels packed here, so their sha256 is the same on every build.
ZIP_DATE = (2020, 2, 2, 0, 0, 0)
# Startup cell of every in-browser copy of a chapter (see livingspec/lite.py).
SETUP_CELL = ("# Added by `make lite` to the in-browser copy: names the notebook for the kernel\n"
              "# (a chapter shows its widgets only in a live kernel) and defines %%raises,\n"
              "# which prints the error of a cell that raises on purpose and goes on.\n"
              "import livingspec.lite\n\n"
              "livingspec.lite.install({path!r})")
# What chapters 09 and 11 read from bench/ (next to histtrim, as in the checkout).
BENCH_FILES = ("bench/histories.py", "bench/compare.py", "bench/results/*")


def canonical(name: str) -> str:
    """A distribution name as the lock keys it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _run(*args: str | Path, cwd: Path = ROOT) -> None:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          check=False)
    if done.returncode:
        sys.exit(f"make lite: {' '.join(map(str, args[:3]))} ... failed:\n{done.stderr[-3000:]}")


def npm_pyodide() -> Path:
    """The npm package pyodide, installed exactly as lite/package-lock.json pins it."""
    npm = WORK / "npm"
    npm.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(LITE / name, npm / name)
    if not (npm / "node_modules" / "pyodide" / "pyodide.mjs").exists():
        _run("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", cwd=npm)
    return npm / "node_modules" / "pyodide"


def pypi_wheels() -> list[Path]:
    """The Pyodide-side wheels of lite/requirements.txt (PyPI, every hash checked)."""
    wheels = WORK / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    _run(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes",
         "--only-binary=:all:", "--python-version", "3.14", "--implementation", "cp",
         "--abi", "cp314", "--abi", "none", "--platform", "pyemscripten_2026_0_wasm32",
         "--platform", "any", "-d", wheels, "-r", LITE / "requirements.txt")
    pinned = {canonical(line.split("==")[0]) for line in _requirements()}
    found = [w for w in sorted(wheels.glob("*.whl")) if canonical(w.name.split("-")[0]) in pinned]
    missing = pinned - {canonical(w.name.split("-")[0]) for w in found}
    if missing:
        sys.exit(f"make lite: no wheel downloaded for {sorted(missing)}")
    return found


def _requirements() -> list[str]:
    lines = (LITE / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def kernel_wheels() -> list[Path]:
    """piplite, pyodide-kernel and the ipykernel shim that jupyterlite-pyodide-kernel bundles."""
    import jupyterlite_pyodide_kernel  # noqa: F401  (the venv's, pinned in constraints.txt)

    share = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyterlite"
    pypi = share / "pyodide-kernel-extension" / "static" / "pypi"
    return [w for w in sorted(pypi.glob("*.whl")) if not w.name.startswith("widgetsnbextension")]


def histtrim_wheel() -> Path:
    """histtrim's own wheel, built from this checkout (pure Python: pydantic is its only need)."""
    out = WORK / "histtrim-wheel"
    shutil.rmtree(out, ignore_errors=True)
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, ROOT)
    (wheel,) = out.glob("histtrim-*.whl")
    return wheel


def pack_wheel(name: str, version: str, files: dict[str, Path], requires: list[str]) -> Path:
    """A pure wheel of `files` (archive name -> file), deterministic byte for byte."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = WORK / "packed" / f"{dist}-py3-none-any.whl"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                    *(f"Requires-Dist: {r}\n" for r in requires)])
    entries = {arc: src.read_bytes() for arc, src in sorted(files.items())}
    entries[f"{dist}.dist-info/METADATA"] = meta.encode()
    entries[f"{dist}.dist-info/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: tools/build_lite.py\n"
                                          b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = [f"{arc},sha256={_b64(data)},{len(data)}" for arc, data in entries.items()]
    entries[f"{dist}.dist-info/RECORD"] = ("\n".join([*record, f"{dist}.dist-info/RECORD,,"])
                                           + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for arc, data in entries.items():
            archive.writestr(zipfile.ZipInfo(arc, ZIP_DATE), data, zipfile.ZIP_DEFLATED)
    return path


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def spec_wheels() -> list[Path]:
    """livingspec (the notebooks' helpers), the examples folder and `BENCH_FILES`, where the
    chapters look for them: `Path(histtrim.__file__).parent.parent` is site-packages."""
    livingspec = {f"livingspec/{p.relative_to(ROOT / 'livingspec').as_posix()}": p
                  for p in (ROOT / "livingspec").rglob("*.py") if "__pycache__" not in p.parts}
    examples = {p.relative_to(ROOT).as_posix(): p for p in (ROOT / "examples").rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}
    bench = {p.relative_to(ROOT).as_posix(): p for pattern in BENCH_FILES
             for p in sorted(ROOT.glob(pattern)) if p.is_file()}
    return [pack_wheel("histtrim-livingspec", "0", livingspec, ["histtrim"]),
            pack_wheel("histtrim-examples", "0", examples, []),
            pack_wheel("histtrim-bench", "0", bench, [])]


def _metadata(wheel: Path) -> tuple[str, str, list[str], list[str]]:
    """Name, version, requirements and top-level import names of a wheel."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (meta_name,) = [n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        meta = Parser().parsestr(archive.read(meta_name).decode())
    requires = []
    for line in meta.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(MARKERS):
            requires.append(canonical(requirement.name))
    tops = set()
    for name in names:
        top = name.split("/")[0]
        if top.endswith((".dist-info", ".data")) or top == "__pycache__":
            continue
        if "/" in name and any(n == f"{top}/__init__.py" for n in names):
            tops.add(top)
        elif "/" not in name and top.endswith(".py"):
            tops.add(top[:-3])
    return meta["Name"], meta["Version"], requires, sorted(tops)


def write_lock(npm_lock: Path, wheels: list[Path], out: Path) -> dict[str, object]:
    """pyodide-lock.json for exactly `wheels` (copied next to it): the npm lock's interpreter
    info, one entry per wheel with its own sha256, and dependencies among the shipped ones."""
    info = json.loads(npm_lock.read_text(encoding="utf-8"))["info"]
    found = {w: _metadata(w) for w in wheels}
    shipped = {canonical(name) for name, _, _, _ in found.values()}
    packages: dict[str, object] = {}
    for wheel, (name, version, requires, imports) in sorted(found.items()):
        shutil.copyfile(wheel, out / wheel.name)
        packages[canonical(name)] = {
            "name": canonical(name), "version": version, "file_name": wheel.name,
            "install_dir": "site", "package_type": "package", "imports": imports,
            "depends": sorted({r for r in requires if r in shipped}),
            "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(), "unvendored_tests": False,
        }
    lock = {"info": info, "packages": packages}
    (out / "pyodide-lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n",
                                           encoding="utf-8")
    return lock


def lite_notebook(source: Path, out: Path) -> None:
    """The in-browser copy of a chapter: the Pyodide kernel, the startup cell first, and
    `%%raises` on each cell tagged `raises-exception`."""
    notebook = json.loads(source.read_text(encoding="utf-8"))
    notebook["metadata"]["kernelspec"] = {"name": "python", "display_name": "Python (Pyodide)",
                                          "language": "python"}
    for cell in notebook["cells"]:  # "Run all" goes past them in Pyodide's kernel too
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = [f"{RAISES}\n", *cell["source"]]
    first_code = next(i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "code")
    notebook["cells"].insert(first_code, {
        "cell_type": "code", "execution_count": None, "id": "lite-setup",
        "metadata": {"tags": ["lite-setup"]}, "outputs": [],
        "source": SETUP_CELL.format(path=source.name).splitlines(keepends=True)})
    out.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "spec" / "lite")
    args = parser.parse_args(argv)
    pyodide = npm_pyodide()
    src = WORK / "src"
    shutil.rmtree(src, ignore_errors=True)
    static = src / "static" / "pyodide"
    static.mkdir(parents=True)
    for name in ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                 "pyodide.js", "package.json"):
        shutil.copyfile(pyodide / name, static / name)
    wheels = [*pypi_wheels(), *kernel_wheels(), histtrim_wheel(), *spec_wheels()]
    lock = write_lock(pyodide / "pyodide-lock.json", wheels, static)
    shutil.copyfile(LITE / "jupyter-lite.json", src / "jupyter-lite.json")
    contents = WORK / "contents"
    shutil.rmtree(contents, ignore_errors=True)
    contents.mkdir()
    for stem in CHAPTERS["runs"]:
        lite_notebook(ROOT / "notebooks" / f"{stem}.ipynb", contents / f"{stem}.ipynb")
    shutil.rmtree(args.out, ignore_errors=True)
    for state in WORK.glob(".jupyterlite.doit.db*"):  # a stale task state skips build steps
        state.unlink()
    _run(Path(sys.executable).parent / "jupyter", "lite", "build", "--lite-dir", src,
         "--contents", contents, "--output-dir", args.out, "--no-sourcemaps",
         "--apps", "lab", "--apps", "notebooks", "--source-date-epoch", "1580601600", cwd=WORK)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"lite: {len(CHAPTERS['runs'])} chapters run in the browser, "
          f"{len(lock['packages'])} wheels (Pyodide {lock['info']['python']}), "  # type: ignore[index]
          f"{size / 1e6:.1f} MB -> {args.out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
