"""Which test runs a README command that `tests/test_readme.py` does not run itself.

A README line is covered by a test function (`test_*`, not marked skip) that launches a
process or an example (`subprocess.run` / `Popen`, `run_example`, nbclient's
`NotebookClient`) and whose string literals name the command's parts. Literals count where
the test uses them: in its body, in the module-level names it reads (e.g. `SCRIPT =
os.path.join(REPO, "examples", "quickstart.py")`), in its `parametrize` values and in the
module's helper functions it calls. A mention in a comment, a docstring or an unused
constant does not cover anything.
"""

from __future__ import annotations

import ast
import os

RUNNERS = {"run", "Popen", "check_call", "check_output", "run_example", "NotebookClient"}


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _strings(node) -> set[str]:
    return {n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _is_skipped(func: ast.FunctionDef) -> bool:
    return any(isinstance(d, (ast.Attribute, ast.Call)) and "skip" in ast.unparse(d)
               and "skipif" not in ast.unparse(d) for d in func.decorator_list)


class _Module:
    def __init__(self, path: str):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.constants = {}
        for n in tree.body:
            if isinstance(n, ast.Assign):
                for target in n.targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = n.value

    def reach(self, func: ast.FunctionDef) -> tuple[set[str], bool]:
        """`(string literals the function uses, whether it launches something)`, following
        the module's helper functions and constants it names."""
        literals, runs, seen, todo = set(), False, set(), [func]
        while todo:
            node = todo.pop()
            body = [*node.body, *node.decorator_list] if isinstance(node, ast.FunctionDef) \
                else [node]
            for part in body:
                for sub in ast.walk(part):
                    if isinstance(sub, ast.Expr) and isinstance(sub.value, ast.Constant):
                        continue  # a docstring
                    if isinstance(sub, ast.Call):
                        runs = runs or _call_name(sub) in RUNNERS
                        literals |= set().union(*(_strings(a) for a in sub.args),
                                                *(_strings(k.value) for k in sub.keywords))
                    if isinstance(sub, ast.Name) and sub.id not in seen:
                        seen.add(sub.id)
                        if sub.id in self.functions:
                            todo.append(self.functions[sub.id])
                        elif sub.id in self.constants:
                            todo.append(self.constants[sub.id])
            if not isinstance(node, ast.FunctionDef):
                literals |= _strings(node)
        return literals, runs


def covering_tests(test_file: str, *parts: str) -> list[str]:
    """The names of the `test_*` functions of `test_file` that run a command with `parts`."""
    module = _Module(test_file)
    found = []
    for name, func in module.functions.items():
        if not name.startswith("test_") or _is_skipped(func):
            continue
        literals, runs = module.reach(func)
        if runs and all(part in literals for part in parts):
            found.append(name)
    return found


def shell_runs(script: str, command: str) -> bool:
    """Whether a shell script has a non-comment line that runs `command`."""
    with open(script, encoding="utf-8") as f:
        lines = [line.split(" #")[0].strip() for line in f]
    return any(line == command or line.startswith(command + " ") for line in lines
               if line and not line.startswith("#"))


def check_covered(repo: str, test_file: str, *parts: str) -> None:
    """Raises AssertionError unless a test of `test_file` runs a command with `parts`."""
    path = os.path.join(repo, test_file)
    assert os.path.exists(path), f"{test_file}, which covers this README line, is missing"
    if not test_file.endswith(".py"):
        assert shell_runs(path, " ".join(parts)), f"{test_file} does not run {' '.join(parts)!r}"
        return
    assert covering_tests(path, *parts), f"no test in {test_file} runs {parts!r}"
